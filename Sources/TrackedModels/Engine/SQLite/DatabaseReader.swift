/// Runs read-only SQL on an SQLite database file: for inspection, reports and tools. (It
/// speaks SQLite's SQL, whatever engine a store uses.)
///
/// The file is opened for reading only and never created, and no `-wal` or `-shm` file is left
/// behind. Every statement of the SQL is compiled and checked before any runs, so a string that
/// hides a write among reads changes nothing.
///
/// ```swift
/// let reader = try DatabaseReader(path: "model.sqlite")
/// let result = try reader.query("SELECT id, count FROM rows WHERE count > ?", [10])
/// print(result.columns, result.rows.count)
/// ```
public final class DatabaseReader {
    private var connection: Connection
    private let busyTimeout: Duration

    /// Opens a database read-only.
    ///
    /// - Throws: ``StoreError`` with code ``StoreError/Code/cannotOpen`` when there is no such
    ///   file.
    public init(path: String, busyTimeout: Duration = .seconds(5)) throws {
        self.busyTimeout = busyTimeout
        connection = try translatingSQLiteErrors {
            try Connection(filename: Connection.absoluteFilename(path), mode: .reading, busyTimeout: busyTimeout)
        }
    }

    /// The result of a query: column names and rows of values. Text that is not valid UTF-8
    /// shows each invalid byte as `\xNN`.
    public struct Result: Sendable, Hashable {
        public var columns: [String]
        public var rows: [[SQLValue]]
    }

    /// Runs read-only SQL and returns the rows of its last statement.
    ///
    /// - Parameters:
    ///   - sql: One or more statements; each must be read-only.
    ///   - arguments: Values for the `?` placeholders of the last statement.
    ///   - limit: Stop after this many rows.
    /// - Throws: ``StoreError`` with code ``StoreError/Code/notReadOnly`` naming the first
    ///   statement that would write (nothing has run then), or what SQLite reported, with its
    ///   ``SQLiteError`` attached.
    public func query(_ sql: String, _ arguments: [SQLValue] = [], limit: Int? = nil) throws -> Result {
        // A file another user cannot write is read without locks: read again if it changed.
        try translatingSQLiteErrors {
            try Connection.readConsistently(&connection, busyTimeout: busyTimeout) { try Self.run(sql, arguments, limit: limit, on: $0) }
        }
    }

    private static func run(_ sql: String, _ arguments: [SQLValue], limit: Int?, on connection: Connection) throws -> Result {
        var statements: [Statement] = []
        try connection.forEachStatement(in: sql) { statement in
            guard statement.isReadOnly else {
                throw StoreError(
                    code: .notReadOnly,
                    message: "statement \(statements.count + 1) would change the database: `\(statement.sql)`; nothing ran. Only read-only SQL (SELECT, read-only PRAGMA, EXPLAIN) is allowed here"
                )
            }
            statements.append(statement)
        }
        guard let last = statements.popLast() else {
            throw StoreError(code: .noStatement, message: "the SQL holds no statement (it is empty, or only blanks and comments); pass one, such as SELECT * FROM rows")
        }
        for statement in statements { try statement.run() }
        try last.bind(arguments)
        defer { last.reset() }
        let columns = (0..<last.columnCount).map(last.columnName(at:))
        var rows: [[SQLValue]] = []
        while rows.count < (limit ?? .max), try last.step() {
            rows.append((0..<columns.count).map(last.displayValue(at:)))
        }
        return Result(columns: columns, rows: rows)
    }
}
