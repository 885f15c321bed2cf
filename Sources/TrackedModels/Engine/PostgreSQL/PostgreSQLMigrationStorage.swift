import Logging

/// Migrations' bookkeeping in a PostgreSQL database: the `trackedmodels_migrations` table. A
/// migration runs in one transaction (PostgreSQL's DDL is transactional), holding an advisory
/// lock that other migrators wait for.
///
/// The table is found by name in whichever schema holds it, and made in the connection's
/// current schema the first time: a migration that changes `search_path`, or a schema that
/// appears later earlier on the path, does not hide what was applied. Each migration starts
/// from the session's defaults (`RESET ALL` after it, inside its transaction), as it would on a
/// connection of its own.
final class PostgreSQLMigrationStorage: MigrationStorage {
    private let session: PostgresSession
    /// The bookkeeping table, schema-qualified, once found or made.
    private var table: String?

    /// Keeps the bookkeeping on an open session (a copy's target writes its rows on it too).
    init(session: PostgresSession) {
        self.session = session
    }

    /// Connects to a database to read or migrate it.
    static func connect(_ url: String) async throws -> PostgreSQLMigrationStorage {
        let endpoint = try PostgresEndpoint(url: url)
        return PostgreSQLMigrationStorage(session: try await PostgresSession.connect(endpoint, role: "trackedmodels migrator", logger: Logger(label: "trackedmodels.migrations")))
    }

    /// The advisory lock migrators take: another migrator waits for it, then finds the work done.
    private static let lock: Int64 = 0x7472_6163_6B6D_6967

    /// The schema-qualified bookkeeping table, if there is one.
    ///
    /// - Throws: ``MigrationError`` when several schemas hold one: which is this database's
    ///   record is not clear.
    private func existingTable() async throws -> String? {
        if let table { return table }
        let schemas = try await session.rows(
            "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = $1 AND c.relkind = 'r' ORDER BY 1",
            [.text(SchemaMigrator.tableName)], doing: "reading the applied migrations"
        ).compactMap { row -> String? in if case .text(let schema) = row.first { schema } else { nil } }
        guard schemas.count <= 1 else {
            throw MigrationError(
                code: .unclearRecord,
                message: "schemas \(schemas.joined(separator: ", ")) each hold a \(SchemaMigrator.tableName) table, so which migrations this database has applied is not clear; drop the stray one"
            )
        }
        table = schemas.first.map { "\(quoteIdentifier($0)).\(SchemaMigrator.tableName)" }
        return table
    }

    func appliedMigrations() async throws -> [AppliedMigration] {
        guard let table = try await existingTable() else { return [] }
        return try await session.rows("SELECT version, name, checksum, applied_at FROM \(table) ORDER BY version", doing: "reading the applied migrations").compactMap { row in
            guard case .integer(let version) = row[0], case .text(let name) = row[1], case .text(let checksum) = row[2], case .text(let appliedAt) = row[3] else { return nil }
            return AppliedMigration(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt)
        }
    }

    func inMigrationTransaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await session.begin(doing: "beginning a migration")
        do {
            _ = try await session.rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.lock)], doing: "waiting for other migrators")
            if try await existingTable() == nil {
                let schema = try await session.rows("SELECT current_schema()::text", doing: "creating the migrations table").first?.first
                guard case .text(let name) = schema else {
                    throw MigrationError(code: .unclearRecord, message: "the connection has no current schema to keep \(SchemaMigrator.tableName) in; set search_path")
                }
                let made = "\(quoteIdentifier(name)).\(SchemaMigrator.tableName)"
                _ = try await session.rows(
                    "CREATE TABLE \(made) (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)",
                    doing: "creating the migrations table"
                )
                table = made
            }
            let result = try await body()
            try await session.end("COMMIT", doing: "committing a migration")
            // Committed: a failure now (a lost connection, which resets it anyway) is no failure of it.
            _ = try? await session.rows("RESET ALL", doing: "resetting the session after a migration")
            return result
        } catch {
            try? await session.end("ROLLBACK", doing: "rolling a migration back")
            _ = try? await session.rows("RESET ALL", doing: "resetting the session after a migration")
            // A table made in the rolled-back transaction is gone: look again next time.
            table = nil
            throw error
        }
    }

    /// Runs the statements, then puts the session's settings back to their defaults (inside
    /// the transaction: a copy's rows, or the next migration in the same transaction, start from
    /// them too).
    func run(_ migration: Migration) async throws {
        for statement in PostgreSQLText.statements(in: migration.sql) {
            do {
                _ = try await session.rows(statement, doing: "running migration \(migration.fileName)")
            } catch let error as StoreError {
                throw FailedStatement(sql: statement, error: error)
            }
        }
        _ = try await session.rows("RESET ALL", doing: "resetting the session after migration \(migration.fileName)")
    }

    func record(_ migration: Migration) async throws {
        guard let table else { preconditionFailure("a migration is recorded inside inMigrationTransaction, which finds or makes the table") }
        _ = try await session.rows(
            "INSERT INTO \(table) (version, name, checksum, applied_at) VALUES ($1, $2, $3, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))",
            [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum)], doing: "recording migration \(migration.fileName)"
        )
    }

    func close() {
        session.close()
    }
}
