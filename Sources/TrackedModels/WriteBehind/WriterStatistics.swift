/// Counts of what the store's database worker has done since the store opened.
///
/// Deterministic figures for tests and benchmarks: a million assignments to one cell followed
/// by a flush add exactly one to ``rowStatements``.
public struct WriterStatistics: Sendable, Hashable {
    /// Transactions committed.
    public var commits = 0
    /// INSERT, UPDATE and DELETE statements committed.
    public var rowStatements = 0
    /// Transactions that failed and were rolled back.
    public var failures = 0
    /// Attempts retried after `SQLITE_BUSY` or `SQLITE_LOCKED`.
    public var busyRetries = 0
    /// Changes the database refused for good (left out of a commit, kept pending with their error).
    public var rejectedChanges = 0
}
