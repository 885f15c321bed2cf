import Foundation

/// Migrations' bookkeeping in an SQLite file: the `trackedmodels_migrations` table.
struct SQLiteMigrationStorage: MigrationStorage {
    private let connection: Connection

    /// Keeps the bookkeeping on an open connection (a copy's target writes its rows on it too).
    init(connection: Connection) {
        self.connection = connection
    }

    /// Reads a file's applied migrations, leaving no `-wal` or `-shm` file behind; never
    /// creates it. (A file read without locks, because this user cannot write it, is read
    /// again if someone wrote it meanwhile.)
    static func appliedMigrations(readingAt path: String, busyTimeout: Duration) throws -> [AppliedMigration] {
        try translatingSQLiteErrors {
            var connection = try Connection(filename: Connection.absoluteFilename(path), mode: .reading, busyTimeout: busyTimeout)
            return try Connection.readConsistently(&connection, busyTimeout: busyTimeout) { try SQLiteMigrationStorage(connection: $0).appliedMigrations() }
        }
    }

    /// Opens (or creates) a file to migrate it, in WAL mode.
    static func writing(at path: String, busyTimeout: Duration) throws -> SQLiteMigrationStorage {
        try translatingSQLiteErrors {
            let connection = try Connection(filename: Connection.absoluteFilename(path), mode: .readWriteCreate, busyTimeout: busyTimeout)
            try connection.execute("PRAGMA journal_mode = WAL")
            return SQLiteMigrationStorage(connection: connection)
        }
    }

    /// Whether a database file exists at a path.
    static func exists(at path: String) -> Bool {
        FileManager.default.fileExists(atPath: Connection.absoluteFilename(path))
    }

    func appliedMigrations() throws -> [AppliedMigration] {
        try translatingSQLiteErrors {
            let exists = try connection.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(SchemaMigrator.tableName)])
            guard exists == .integer(1) else { return [] }
            return try connection.makeStatement("SELECT version, name, checksum, applied_at FROM \(SchemaMigrator.tableName) ORDER BY version").rows().compactMap { row in
                guard case .integer(let version) = row[0], case .text(let name) = row[1],
                      case .text(let checksum) = row[2], case .text(let appliedAt) = row[3]
                else { return nil }
                return AppliedMigration(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt)
            }
        }
    }

    func inMigrationTransaction<Result>(_ body: () async throws -> Result) async throws -> Result {
        try translatingSQLiteErrors { try connection.execute("BEGIN IMMEDIATE TRANSACTION") }
        do {
            try translatingSQLiteErrors {
                try connection.execute("""
                    CREATE TABLE IF NOT EXISTS \(SchemaMigrator.tableName) (
                        version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL
                    )
                    """)
            }
            let result = try await body()
            try translatingSQLiteErrors { try connection.execute("COMMIT TRANSACTION") }
            return result
        } catch {
            // After some errors SQLite already rolled back, and then the ROLLBACK fails: fine.
            if connection.isInTransaction { try? connection.execute("ROLLBACK TRANSACTION") }
            throw error
        }
    }

    func run(_ migration: Migration) throws {
        do {
            try connection.forEachStatement(in: migration.sql) { try $0.run() }
        } catch let error as SQLiteError {
            throw FailedStatement(sql: error.sql ?? "?", error: error.storeError)
        }
    }

    func close() {}

    func record(_ migration: Migration) throws {
        try translatingSQLiteErrors {
            try connection.makeStatement("INSERT INTO \(SchemaMigrator.tableName) (version, name, checksum, applied_at) VALUES (?, ?, ?, datetime('now'))")
                .run([.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum)])
        }
    }
}
