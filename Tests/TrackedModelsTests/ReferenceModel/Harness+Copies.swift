import Foundation
import PostgresTestSupport
@testable import TrackedModels

/// Copying the program's database (``DatabaseCopy``) to another one, of either engine, while
/// the store has it open: the copy must hold exactly the rows the reference says the database
/// holds, with keys the target assigns past them, or be refused as a whole where a value does
/// not fit (leaving the target as it was).
extension Harness {
    /// The target: an SQLite file, or (a fourth of the time, with a server) a PostgreSQL
    /// database. Half the time it already has the table and one row of its own: refused, or
    /// (half of those times) replaced.
    ///
    /// Half the time the copy runs a migration set (one migration, `1_items`, making the table
    /// as the store would): written for the other engine (refused before anything), or with
    /// the source not recorded at its version (refused too), or with the source recorded, when
    /// the migration must be applied and recorded in the same transaction as the rows.
    func copyTheDatabase(_ a: UInt64) async throws {
        guard store != nil else { return }
        let targetEngine: TestEngine = a % 4 == 0 && PostgresServer.isEnabled ? .postgres : .sqlite
        let holdsARow = a / 4 % 2 == 1
        let replacing = a / 8 % 2 == 1
        let migrating = a / 16 % 2 == 1
        let wrongDialect = migrating && a / 32 % 4 == 0
        // (A source recorded at an earlier copy stays so.)
        let records = migrating && !wrongDialect && a / 32 % 4 != 1
        let wasRecorded = try await other.rows(engine == .sqlite
            ? "SELECT count(*) FROM sqlite_master WHERE name = '\(SchemaMigrator.tableName)'"
            : "SELECT count(*) FROM pg_tables WHERE tablename = '\(SchemaMigrator.tableName)'") != [[.integer(0)]]
        let recorded = migrating && !wrongDialect && (records || wasRecorded)
        let target = targetEngine == .sqlite ? directory.path("copy-\(transcript.count).sqlite") : try await PostgresServer.makeDatabase()
        note("copy the database to a new \(targetEngine) database\(holdsARow ? " holding a row" : "")\(replacing ? ", replacing its rows" : "")"
            + (migrating ? ", migrating it with \(wrongDialect ? "the other engine's set" : recorded ? "the set the source is recorded at" : "a set the source is not recorded at")" : ""))
        let schema = Item._$schema
        let columns = schema.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        let theirRow: [SQLValue] = [.integer(-7), .text("theirs"), .integer(1), .null, .real(0.5), .null, .integer(0), .null]
        if holdsARow {
            let made = try await OtherConnection.open(targetEngine, target)
            defer { made.close() }
            try await made.commit([
                (targetEngine == .sqlite ? schema.createTableSQL : PostgreSQLSchema.createTableSQL(schema), []),
                ("INSERT INTO items (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", theirRow),
            ])
        }
        if records {
            try await other.commit([
                ("CREATE TABLE IF NOT EXISTS \(SchemaMigrator.tableName) (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)", []),
                ("INSERT INTO \(SchemaMigrator.tableName) VALUES (1, 'items', 'theirs', 'then') ON CONFLICT DO NOTHING", []),
            ])
        }
        var migrations: SchemaMigrator?
        if migrating {
            let dialect: MigrationDialect = (targetEngine == .postgres) != wrongDialect ? .postgres : .sqlite
            let sql = dialect == .postgres ? PostgreSQLSchema.createTableSQL(schema) : schema.createTableSQL
            migrations = try SchemaMigrator([Migration(version: 1, name: "items", sql: sql + ";")], dialect: dialect)
        }
        var copy = DatabaseCopy(models: [Item.self], migrations: migrations)
        copy.replacesRows = replacing
        let refusal = Self.refusal(of: reference.file, to: targetEngine)
        let outcome: Result<DatabaseCopy.Report, any Error>
        do {
            outcome = .success(try await copy.run(from: engine.location(database), to: targetEngine.location(target)))
        } catch {
            outcome = .failure(error)
        }
        let before: [Int64: [SQLValue]] = holdsARow ? [-7: theirRow] : [:]
        switch outcome {
        case .failure(let error as MigrationError) where error.code == .wrongDialect && wrongDialect:
            try await checkCopy(at: target, on: targetEngine, holds: before, existing: holdsARow)
        case .failure(let error as CopyError) where error.code == .versionMismatch && migrating && !wrongDialect && !recorded:
            try await checkCopy(at: target, on: targetEngine, holds: before, existing: holdsARow)
        case .failure(let error) where migrating && !recorded:
            throw Divergence(message: "copying with \(wrongDialect ? "the other engine's migrations" : "migrations the source is not recorded at") failed otherwise: \(error)")
        case .success where migrating && !recorded:
            throw Divergence(message: "the copy committed with \(wrongDialect ? "the other engine's migrations" : "migrations the source is not recorded at")")
        // (The target's own row is refused before a source row is read.)
        case .failure(let error as CopyError) where error.code == .targetNotEmpty && holdsARow && !replacing:
            try await checkCopy(at: target, on: targetEngine, holds: before, existing: true)
        case .failure(let error as CopyError) where error.code == .valueNotCopyable && refusal != nil:
            try await checkCopy(at: target, on: targetEngine, holds: before, existing: holdsARow)
        case .failure(let error):
            throw Divergence(message: "copying to \(targetEngine) failed: \(error); expected \(refusal.map { "a refusal of \($0)" } ?? (holdsARow && !replacing ? "a refusal of the target's row" : "the copy"))")
        case .success(let report):
            if holdsARow && !replacing { throw Divergence(message: "the copy to \(targetEngine) committed over the target's own row") }
            if let refusal { throw Divergence(message: "the copy to \(targetEngine) committed, but \(refusal) does not fit") }
            guard report.tables.map(\.name) == ["items"], report.tables.first?.rows == reference.file.count else {
                throw Divergence(message: "the copy reports \(report.tables.map { "\($0.name): \($0.rows)" }); the file holds \(reference.file.count) rows")
            }
            if migrating {
                let connection = try await OtherConnection.open(targetEngine, target)
                defer { connection.close() }
                let versions = try await connection.rows("SELECT version, name FROM \(SchemaMigrator.tableName)")
                guard report.appliedMigrations.map(\.version) == [1], versions == [[.integer(1), .text("items")]] else {
                    throw Divergence(message: "the copy applied \(report.appliedMigrations.map(\.fileName)) and the target records \(versions)")
                }
            }
            try await checkCopy(at: target, on: targetEngine, holds: reference.file, existing: true)
            try await checkNextKey(at: target, on: targetEngine)
        }
    }

    /// The first value of the file a copy to `engine` must refuse, by the model's rules: a
    /// value of another kind than its column's (an integer fits a real column), NULL in a
    /// column that is not optional, a NaN, and on PostgreSQL text holding a NUL.
    private static func refusal(of file: [Int64: [SQLValue]], to engine: TestEngine) -> String? {
        let columns = Item._$schema.columns
        for (key, row) in file.sorted(by: { $0.key < $1.key }) {
            for (value, column) in zip(row, columns) {
                let fits = switch (value, column.type) {
                case (.null, _): column.isOptional && !column.isPrimaryKey
                case (.integer, .integer), (.integer, .real), (.blob, .blob): true
                case (.real(let real), .real): !real.isNaN
                case (.text(let text), .text): engine == .sqlite || !text.utf8.contains(0)
                default: false
                }
                if !fits { return "\(column.name) \(value.describedExactly) of row \(key)" }
            }
        }
        return nil
    }

    /// The target holds exactly `rows` (or, for a target the copy would have made, nothing at
    /// all: no file, or no table).
    private func checkCopy(at target: String, on targetEngine: TestEngine, holds rows: [Int64: [SQLValue]], existing: Bool) async throws {
        if !existing, targetEngine == .sqlite {
            guard !FileManager.default.fileExists(atPath: target) else { throw Divergence(message: "a refused copy left the file it made") }
            return
        }
        let connection = try await OtherConnection.open(targetEngine, target)
        defer { connection.close() }
        if !existing {
            let tables = try await connection.rows("SELECT count(*) FROM pg_tables WHERE tablename = 'items'")
            guard tables.first?.first == .integer(0) else { throw Divergence(message: "a refused copy left the table it made") }
            return
        }
        var found: [Int64: [SQLValue]] = [:]
        for row in try await connection.rows("SELECT id, title, count, note, score, payload, flag, link_id FROM items") {
            guard case .integer(let key) = row[0] else { throw Divergence(message: "the copy holds a row whose key is \(row[0].describedExactly)") }
            found[key] = row
        }
        guard Self.sameRows(found, rows) else {
            let keys = Set(found.keys).union(rows.keys).sorted().filter { !Values.same(found[$0], rows[$0]) }
            throw Divergence(message: "the copy holds \(keys.map { "\($0): \(found[$0].map { "\($0.map(\.describedExactly))" } ?? "no row")" }); expected \(keys.map { "\($0): \(rows[$0].map { "\($0.map(\.describedExactly))" } ?? "no row")" })")
        }
    }

    /// A row inserted into the copy without a key gets one that no copied row has (unless the
    /// largest copied key is the largest there is, where PostgreSQL's sequence has nowhere to
    /// go).
    private func checkNextKey(at target: String, on targetEngine: TestEngine) async throws {
        let connection = try await OtherConnection.open(targetEngine, target)
        defer { connection.close() }
        do {
            let inserted = try await connection.rows("INSERT INTO items (title, count, score, flag) VALUES ('next', 0, 0, 0) RETURNING id")
            guard case .integer(let key)? = inserted.first?.first, reference.file[key] == nil else {
                throw Divergence(message: "a row inserted into the copy without a key got \(inserted), which a copied row has")
            }
        } catch is StoreError where targetEngine == .postgres && reference.file[.max] != nil {
            // The sequence stands at its maximum: PostgreSQL refuses the next key.
        }
    }
}
