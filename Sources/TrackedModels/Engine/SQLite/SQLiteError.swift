/// An error reported by SQLite: its result code, its message, and the SQL that failed. The
/// store reports a ``StoreError`` in its own terms and attaches this one as its
/// ``StoreError/underlying`` error.
///
/// Bound values are never part of the description, so an error can be logged without leaking
/// user data. The description is meant for people; its format may change, so match on
/// ``code`` instead of parsing it:
///
/// ```swift
/// do {
///     try await store.flush()
/// } catch let error as StoreError where error.code == .changeRejected {
///     let refusal = error.underlying as? StoreError        // .constraintRefused, .check
///     let sqlite = refusal?.underlying as? SQLiteError     // code 275: SQLITE_CONSTRAINT_CHECK
///     print(sqlite?.message ?? error.message)
/// }
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
public struct SQLiteError: Error, Sendable, Hashable {
    /// The extended result code.
    public var code: ResultCode
    /// SQLite's message (`sqlite3_errmsg`), or one of ours for errors raised by this library.
    public var message: String
    /// The SQL that failed, when there is one.
    public var sql: String?

    public init(code: ResultCode, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code: `SQLITE_CONSTRAINT` for `SQLITE_CONSTRAINT_CHECK`.
    public var primaryCode: ResultCode { code.primary }
}

extension SQLiteError: CustomStringConvertible {
    public var description: String {
        var text = "SQLite error \(code.rawValue)"
        if !code.isPrimary { text += " (primary \(primaryCode.rawValue))" }
        text += ": \(message)"
        if let sql { text += " — while executing `\(sql)`" }
        return text
    }
}
