import Foundation

/// An SQLite file as one side of a ``DatabaseCopy``: read in one read transaction (a WAL
/// snapshot), or written in one `BEGIN IMMEDIATE` transaction with foreign keys enforced.
///
/// A target file that does not exist is created (in WAL mode, as a store makes it) and removed
/// again when the copy fails; an existing one keeps its journal mode.
final class SQLiteCopyEndpoint: CopySource, CopyTarget {
    private var connection: Connection?
    /// The file this endpoint created, to remove when the copy fails.
    private let createdFile: String?

    private init(connection: Connection, createdFile: String?) {
        self.connection = connection
        self.createdFile = createdFile
    }

    /// Opens a file to read, leaving no `-wal` or `-shm` file behind; never creates it.
    static func reading(_ path: String) throws -> SQLiteCopyEndpoint {
        try translatingSQLiteErrors {
            SQLiteCopyEndpoint(connection: try Connection(filename: Connection.absoluteFilename(path), mode: .reading, busyTimeout: .seconds(30)), createdFile: nil)
        }
    }

    /// Opens a file to write, creating it when missing.
    static func writing(_ path: String) throws -> SQLiteCopyEndpoint {
        let filename = Connection.absoluteFilename(path)
        let existed = FileManager.default.fileExists(atPath: filename)
        return try translatingSQLiteErrors {
            let connection = try Connection(filename: filename, mode: .readWriteCreate, busyTimeout: .seconds(30))
            let endpoint = SQLiteCopyEndpoint(connection: connection, createdFile: existed ? nil : filename)
            do {
                if !existed { try connection.execute("PRAGMA journal_mode = WAL") }
                try connection.execute("PRAGMA foreign_keys = ON")
            } catch {
                endpoint.close(keeping: false)
                throw error
            }
            return endpoint
        }
    }

    private var open: Connection {
        guard let connection else { preconditionFailure("a copy endpoint is used after close") }
        return connection
    }

    var migrationStorage: any MigrationStorage { SQLiteMigrationStorage(connection: open) }

    func identity() throws -> String {
        var status = stat()
        guard stat(open.filename, &status) == 0 else { return "sqlite \(open.filename)" }
        return "sqlite device \(status.st_dev) inode \(status.st_ino)"
    }

    func appliedMigrations() throws -> [AppliedMigration] {
        try SQLiteMigrationStorage(connection: open).appliedMigrations()
    }

    func differences(of schema: TableSchema) throws -> [SchemaDifference] {
        try translatingSQLiteErrors { try schema.differences(from: open) }
    }

    func rowCount(of schema: TableSchema) throws -> Int {
        try translatingSQLiteErrors {
            guard case .integer(let count) = try open.scalar("SELECT count(*) FROM \(quoteIdentifier(schema.name))") else { return 0 }
            return Int(count)
        }
    }

    func forEachBatch(of schema: TableSchema, _ body: ([[SQLValue]]) async throws -> Void) async throws {
        let statement = try translatingSQLiteErrors { try open.makeStatement(schema.selectSQL) }
        var batch: [[SQLValue]] = []
        batch.reserveCapacity(copyBatchSize)
        while try translatingSQLiteErrors({ try statement.step() }) {
            var row: [SQLValue] = []
            row.reserveCapacity(schema.columns.count)
            for (index, column) in schema.columns.enumerated() {
                guard let value = statement.validatedValue(at: index) else {
                    throw CopyError(
                        code: .valueNotCopyable,
                        message: "row \(statement.value(at: schema.primaryKeyIndex)) of table \(schema.name) holds text in column \(column.name) that is not valid UTF-8; nothing was copied. Fix the row in the source (store it as a blob, or as UTF-8 text), then copy again"
                    )
                }
                row.append(value)
            }
            batch.append(row)
            if batch.count == copyBatchSize {
                try await body(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await body(batch) }
    }

    /// The read transaction's end cannot fail what was read: it is not checked (the body
    /// checks ``checkConsistent()`` before the target commits).
    func inSnapshot<Result>(_ body: () async throws -> Result) async throws -> Result {
        try translatingSQLiteErrors { try open.execute("BEGIN DEFERRED TRANSACTION") }
        defer { if open.isInTransaction { try? open.execute("COMMIT TRANSACTION") } }
        return try await body()
    }

    func checkConsistent() throws {
        guard open.readIsConsistent else {
            throw StoreError(code: .busy, message: "another process wrote \(open.filename) while it was copied, without the locks a reader could see; nothing was copied, run the copy again")
        }
    }

    func inTransaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        try translatingSQLiteErrors { try open.execute("BEGIN IMMEDIATE TRANSACTION") }
        do {
            let result = try await body()
            try translatingSQLiteErrors { try open.execute("COMMIT TRANSACTION") }
            return result
        } catch {
            // After some errors SQLite already rolled back, and then the ROLLBACK fails: fine.
            if open.isInTransaction { try? open.execute("ROLLBACK TRANSACTION") }
            throw error
        }
    }

    func createTableIfMissing(_ schema: TableSchema) throws {
        try translatingSQLiteErrors { try schema.createIfMissing(on: open) }
    }

    func clear(_ columns: [Int], of schema: TableSchema) throws {
        let names = columns.map { quoteIdentifier(schema.columns[$0].name) }
        try translatingSQLiteErrors {
            try open.execute("UPDATE \(quoteIdentifier(schema.name)) SET \(names.map { "\($0) = NULL" }.joined(separator: ", ")) WHERE \(names.map { "\($0) IS NOT NULL" }.joined(separator: " OR "))")
        }
    }

    func deleteRows(of schema: TableSchema) throws {
        try translatingSQLiteErrors { try open.execute("DELETE FROM \(quoteIdentifier(schema.name))") }
    }

    func insert(_ rows: [[SQLValue]], into schema: TableSchema) throws {
        let columns = schema.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        let values = Array(repeating: "?", count: schema.columns.count).joined(separator: ", ")
        let statement = try translatingSQLiteErrors { try open.cachedStatement("INSERT INTO \(quoteIdentifier(schema.name)) (\(columns)) VALUES (\(values))") }
        for row in rows {
            try naming(row[schema.primaryKeyIndex], of: schema, doing: "copying") { try statement.run(row) }
        }
    }

    /// Runs a statement for one row, its failure naming the row.
    private func naming(_ key: SQLValue, of schema: TableSchema, doing operation: String, _ body: () throws -> Void) throws {
        do {
            try translatingSQLiteErrors(body)
        } catch var error as StoreError {
            error.message = "\(operation) row \(key) of table \(schema.name) failed: \(error.message)"
            throw error
        }
    }

    func set(_ columns: [Int], of rows: [[SQLValue]], in schema: TableSchema) throws {
        let assignments = columns.map { "\(quoteIdentifier(schema.columns[$0].name)) = ?" }.joined(separator: ", ")
        let statement = try translatingSQLiteErrors {
            try open.cachedStatement("UPDATE \(quoteIdentifier(schema.name)) SET \(assignments) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ?")
        }
        for row in rows {
            try naming(row[0], of: schema, doing: "linking") { try statement.run(Array(row.dropFirst()) + [row[0]]) }
        }
    }

    /// SQLite moves a rowid (and an `AUTOINCREMENT` table's sequence) past the keys inserted on
    /// its own.
    func advanceKeySequence(of schema: TableSchema) {}

    func close() {
        close(keeping: true)
    }

    func close(keeping: Bool) {
        connection = nil
        guard !keeping, let createdFile else { return }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: createdFile + suffix)
        }
    }
}
