/// The database under a store, as its ``DatabaseWorker`` uses it: the only place where one
/// engine (SQLite today, PostgreSQL later) differs from another.
///
/// The registrar, write-behind, feeds and live results never see an engine: they exchange
/// ``WriteUnit``s, ``CommitReport``s and ``ExternalChangeBatch``es with the worker, whatever
/// stores them. Every call comes from the worker's queue, one at a time.
protocol DatabaseEngine: AnyObject {
    /// Commits units in one transaction, or nothing.
    ///
    /// Inside the transaction, before writing, the engine reads what other connections
    /// committed (so that everything the change log holds after that is this commit's own), and
    /// after writing it notes where the log and the database's version stand, so that a commit
    /// by someone else right after this one is never missed.
    ///
    /// - Parameter willCommit: Called inside the transaction, just before it commits, with
    ///   what it will report; an error it throws fails the transaction.
    /// - Throws: ``EngineFailure``: which unit and operation failed, or that the transaction as
    ///   a whole did. Nothing is committed then.
    func commit(_ units: [WriteUnit], willCommit: (CommitReport) throws -> Void) throws -> EngineCommit

    /// The current rows of a table by primary key, in model column order; `nil` for a key with
    /// no row.
    func readRows(table: Int, keys: [SQLValue]) throws -> [[SQLValue]?]

    /// What other connections committed since the last look, row by row; `nil` when nobody
    /// did. Prunes the change log when it has grown past its retention, whoever wrote it.
    func readChangeLog() throws -> ExternalChangeBatch?

    /// Releases the connection. No call follows.
    func close()
}

/// What a committed transaction produced, and what others had committed before it.
struct EngineCommit {
    var report: CommitReport
    var external: ExternalChangeBatch
}

/// Why ``DatabaseEngine/commit(_:willCommit:)`` committed nothing.
enum EngineFailure: Error {
    /// An operation failed: `unit` and `operation` are positions in the units given.
    case operation(unit: Int, operation: Int, SQLiteError)
    /// Beginning, reading the log, or committing failed.
    case transaction(SQLiteError)

    var error: SQLiteError {
        switch self {
        case .operation(_, _, let error), .transaction(let error): error
        }
    }
}
