import Logging

/// Migrations' bookkeeping in a PostgreSQL database: the `trackedmodels_migrations` table, in
/// the connection's schema. A migration runs in one transaction (PostgreSQL's DDL is
/// transactional), holding an advisory lock that other migrators wait for.
final class PostgreSQLMigrationStorage: MigrationStorage {
    private let session: PostgresSession

    private init(session: PostgresSession) {
        self.session = session
    }

    /// Connects to a database to read or migrate it.
    static func connect(_ url: String) async throws -> PostgreSQLMigrationStorage {
        let endpoint = try PostgresEndpoint(url: url)
        return PostgreSQLMigrationStorage(session: try await PostgresSession.connect(endpoint, role: "trackedmodels migrator", logger: Logger(label: "trackedmodels.migrations")))
    }

    /// The advisory lock migrators take: another migrator waits for it, then finds the work done.
    private static let lock: Int64 = 0x7472_6163_6B6D_6967

    func appliedMigrations() async throws -> [AppliedMigration] {
        let exists = try await session.rows("SELECT to_regclass($1) IS NOT NULL", [.text(SchemaMigrator.tableName)], doing: "reading the applied migrations")
        guard exists.first?.first == .integer(1) else { return [] }
        return try await session.rows(
            "SELECT version, name, checksum, applied_at FROM \(SchemaMigrator.tableName) ORDER BY version", doing: "reading the applied migrations"
        ).compactMap { row in
            guard case .integer(let version) = row[0], case .text(let name) = row[1], case .text(let checksum) = row[2], case .text(let appliedAt) = row[3] else { return nil }
            return AppliedMigration(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt)
        }
    }

    func inMigrationTransaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        _ = try await session.rows("BEGIN", doing: "beginning a migration")
        do {
            _ = try await session.rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.lock)], doing: "waiting for other migrators")
            _ = try await session.rows(
                """
                CREATE TABLE IF NOT EXISTS \(SchemaMigrator.tableName) (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL
                )
                """,
                doing: "creating the migrations table"
            )
            let result = try await body()
            _ = try await session.rows("COMMIT", doing: "committing a migration")
            return result
        } catch {
            _ = try? await session.rows("ROLLBACK", doing: "rolling a migration back")
            throw error
        }
    }

    func run(_ migration: Migration) async throws {
        for statement in PostgreSQLText.statements(in: migration.sql) {
            do {
                _ = try await session.rows(statement, doing: "running migration \(migration.fileName)")
            } catch let error as StoreError {
                throw FailedStatement(sql: statement, error: error)
            }
        }
    }

    func record(_ migration: Migration) async throws {
        _ = try await session.rows(
            "INSERT INTO \(SchemaMigrator.tableName) (version, name, checksum, applied_at) VALUES ($1, $2, $3, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))",
            [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum)], doing: "recording migration \(migration.fileName)"
        )
    }

    func close() {
        session.close()
    }
}
