import Logging

/// A PostgreSQL database as one side of a ``DatabaseCopy``: read in one `REPEATABLE READ READ
/// ONLY` transaction through a cursor, or written in one transaction with multi-row inserts.
///
/// Tables are found through the connection's search path, as a store finds them.
final class PostgreSQLCopyEndpoint: CopySource, CopyTarget {
    private let session: PostgresSession
    let migrationStorage: any MigrationStorage

    private init(session: PostgresSession) {
        self.session = session
        migrationStorage = PostgreSQLMigrationStorage(session: session)
    }

    static func connect(_ url: String) async throws -> PostgreSQLCopyEndpoint {
        let endpoint = try PostgresEndpoint(url: url)
        return PostgreSQLCopyEndpoint(session: try await PostgresSession.connect(endpoint, role: "trackedmodels copy", logger: Logger(label: "trackedmodels.copy")))
    }

    func identity() async throws -> String {
        let row = try await session.rows(
            "SELECT current_database()::text, current_schema()::text, coalesce(inet_server_port(), 0), pg_postmaster_start_time()::text", doing: "telling the database apart"
        ).first ?? []
        return "postgres " + row.map(\.description).joined(separator: " ")
    }

    func appliedMigrations() async throws -> [AppliedMigration] {
        try await migrationStorage.appliedMigrations()
    }

    func differences(of schema: TableSchema) async throws -> [SchemaDifference] {
        let catalog = try await session.rows(PostgreSQLSchema.columnsSQL, [.text(schema.name)], doing: "reading the schema of \(schema.name)")
        return PostgreSQLSchema.differences(of: schema, catalog: catalog)
    }

    func rowCount(of schema: TableSchema) async throws -> Int {
        guard case .integer(let count)? = try await session.rows("SELECT count(*) FROM \(quoteIdentifier(schema.name))", doing: "counting the rows of \(schema.name)").first?.first else { return 0 }
        return Int(count)
    }

    /// Reads through a cursor, ``copyBatchSize`` rows a round trip (inside the transaction
    /// the copy holds on this connection).
    func forEachBatch(of schema: TableSchema, _ body: ([[SQLValue]]) async throws -> Void) async throws {
        let doing = "reading the rows of \(schema.name)"
        _ = try await session.rows("DECLARE trackedmodels_copy NO SCROLL CURSOR FOR \(schema.selectSQL)", doing: doing)
        while true {
            let batch = try await session.rows("FETCH FORWARD \(copyBatchSize) FROM trackedmodels_copy", doing: doing)
            if !batch.isEmpty { try await body(batch) }
            if batch.count < copyBatchSize { break }
        }
        _ = try await session.rows("CLOSE trackedmodels_copy", doing: doing)
    }

    /// The read-only transaction's end cannot fail what was read: it is not checked.
    func inSnapshot<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await session.beginSnapshot(doing: "beginning to read for a copy")
        do {
            let result = try await body()
            try? await session.end("COMMIT", doing: "ending the copy's read")
            return result
        } catch {
            try? await session.end("ROLLBACK", doing: "ending the copy's read")
            throw error
        }
    }

    /// A server's snapshot holds what it read.
    func checkConsistent() {}

    func inTransaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await session.begin(doing: "beginning a copy")
        do {
            let result = try await body()
            try await session.end("COMMIT", doing: "committing the copy")
            return result
        } catch {
            try? await session.end("ROLLBACK", doing: "rolling the copy back")
            throw error
        }
    }

    func createTableIfMissing(_ schema: TableSchema) async throws {
        try await PostgreSQLSchema.createIfMissing(schema, on: session)
    }

    func clear(_ columns: [Int], of schema: TableSchema) async throws {
        let names = columns.map { quoteIdentifier(schema.columns[$0].name) }
        _ = try await session.rows(
            "UPDATE \(quoteIdentifier(schema.name)) SET \(names.map { "\($0) = NULL" }.joined(separator: ", ")) WHERE \(names.map { "\($0) IS NOT NULL" }.joined(separator: " OR "))",
            doing: "unlinking the rows of \(schema.name)"
        )
    }

    func deleteRows(of schema: TableSchema) async throws {
        _ = try await session.rows("DELETE FROM \(quoteIdentifier(schema.name))", doing: "deleting the rows of \(schema.name)")
    }

    /// Inserts as many rows a statement as its 65,535 parameters allow, at most
    /// ``copyBatchSize``.
    ///
    /// - Throws: ``CopyError/Code/valueNotCopyable`` for text holding a NUL character, which
    ///   PostgreSQL's text cannot hold.
    func insert(_ rows: [[SQLValue]], into schema: TableSchema) async throws {
        let width = schema.columns.count
        let perStatement = max(1, min(copyBatchSize, Int(UInt16.max) / width))
        let columns = schema.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        var start = rows.startIndex
        while start < rows.endIndex {
            let chunk = rows[start..<min(start + perStatement, rows.endIndex)]
            let tuples = chunk.indices.map { row in
                "(" + (0..<width).map { "$\((row - start) * width + $0 + 1)" }.joined(separator: ", ") + ")"
            }
            for row in chunk { try refuseNUL(in: row, of: schema) }
            _ = try await session.rows(
                "INSERT INTO \(quoteIdentifier(schema.name)) (\(columns)) VALUES \(tuples.joined(separator: ", "))", chunk.flatMap { $0 },
                doing: "copying rows into \(schema.name)"
            )
            start = chunk.endIndex
        }
    }

    /// One `UPDATE ... FROM (VALUES ...)` per as many rows as the parameters allow, each
    /// value cast to its column's type (a `VALUES` list gives untyped text otherwise).
    func set(_ columns: [Int], of rows: [[SQLValue]], in schema: TableSchema) async throws {
        let types = ([schema.primaryKeyIndex] + columns).map { PostgreSQLSchema.declaredType(schema.columns[$0].type) }
        let perStatement = max(1, min(copyBatchSize, Int(UInt16.max) / types.count))
        let assignments = columns.enumerated().map { "\(quoteIdentifier(schema.columns[$1].name)) = v.c\($0)" }.joined(separator: ", ")
        let names = (["k"] + columns.indices.map { "c\($0)" }).joined(separator: ", ")
        var start = rows.startIndex
        while start < rows.endIndex {
            let chunk = rows[start..<min(start + perStatement, rows.endIndex)]
            let tuples = chunk.indices.map { row in
                "(" + types.enumerated().map { "$\((row - start) * types.count + $0 + 1)::\($1)" }.joined(separator: ", ") + ")"
            }
            _ = try await session.rows(
                "UPDATE \(quoteIdentifier(schema.name)) SET \(assignments) FROM (VALUES \(tuples.joined(separator: ", "))) AS v (\(names)) WHERE \(quoteIdentifier(schema.name)).\(quoteIdentifier(schema.primaryKey.name)) = v.k",
                chunk.flatMap { $0 }, doing: "linking the rows of \(schema.name)"
            )
            start = chunk.endIndex
        }
    }

    private func refuseNUL(in row: [SQLValue], of schema: TableSchema) throws {
        for (index, value) in row.enumerated() {
            guard case .text(let text) = value, text.utf8.contains(0) else { continue }
            throw CopyError(
                code: .valueNotCopyable,
                message: "row \(row[schema.primaryKeyIndex]) of table \(schema.name) holds text with a NUL character in column \(schema.columns[index].name), which PostgreSQL's text cannot hold; nothing was copied. Remove the NUL in the source (or store the value as a blob), then copy again"
            )
        }
    }

    func advanceKeySequence(of schema: TableSchema) async throws {
        let statement = PostgreSQLKeySequence.catchUp(schema, past: nil)
        _ = try await session.rows(statement.sql, statement.arguments, doing: statement.doing)
    }

    func close() {
        session.close()
    }

    func close(keeping: Bool) {
        session.close()
    }
}
