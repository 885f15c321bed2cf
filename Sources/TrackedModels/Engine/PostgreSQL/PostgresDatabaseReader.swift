import Logging

/// Runs read-only SQL on a PostgreSQL database: for inspection, reports and tools, as
/// ``DatabaseReader`` does on an SQLite file. It speaks PostgreSQL's SQL, with `$1`, `$2`, ...
/// placeholders.
///
/// Each query runs in a `READ ONLY` transaction that is rolled back, so SQL that would write
/// (also a function that writes, such as `nextval`) is refused by the server and changes
/// nothing. One statement per query: the server refuses several in one string.
///
/// ```swift
/// let reader = try await PostgresDatabaseReader.connect("postgres://app@localhost/app")
/// let result = try await reader.query("SELECT id, count FROM rows WHERE count > $1", [10])
/// print(result.columns, result.rows.count)
/// reader.close()
/// ```
public final class PostgresDatabaseReader {
    private let session: PostgresSession

    private init(session: PostgresSession) {
        self.session = session
    }

    /// Connects to a database.
    ///
    /// - Throws: ``StoreError`` naming the server and database: ``StoreError/Code/cannotOpen``
    ///   for a bad URL or no such database, ``StoreError/Code/accessDenied`` for bad
    ///   credentials, ``StoreError/Code/connectionLost`` for a server that cannot be reached.
    public static func connect(_ url: String) async throws -> PostgresDatabaseReader {
        let endpoint = try PostgresEndpoint(url: url)
        return PostgresDatabaseReader(session: try await PostgresSession.connect(endpoint, role: "trackedmodels reader", logger: Logger(label: "trackedmodels.reader")))
    }

    /// Runs one read-only statement and returns its rows.
    ///
    /// - Parameters:
    ///   - sql: One statement, in PostgreSQL's SQL.
    ///   - arguments: Values for the `$1`, `$2`, ... placeholders.
    ///   - limit: Stop after this many rows.
    /// - Throws: ``StoreError`` with code ``StoreError/Code/notReadOnly`` for SQL that would
    ///   write (nothing changed), or what the server reported.
    public func query(_ sql: String, _ arguments: [SQLValue] = [], limit: Int? = nil) async throws -> DatabaseReader.Result {
        try await session.begin(readOnly: true, doing: "querying")
        do {
            let result = try await session.result(sql, arguments, limit: limit, doing: "querying")
            try await session.end("ROLLBACK", doing: "querying")
            return DatabaseReader.Result(columns: result.columns, rows: result.rows)
        } catch {
            try? await session.end("ROLLBACK", doing: "querying")
            // The transaction's READ ONLY refused a write: the caller's SQL is not read-only.
            guard let refused = error as? StoreError, refused.code == .readOnly else { throw error }
            throw StoreError(code: .notReadOnly, message: refused.message + "; nothing was changed: only SQL that reads runs here", underlying: refused.underlying)
        }
    }

    /// Closes the connection.
    public func close() {
        session.close()
    }
}
