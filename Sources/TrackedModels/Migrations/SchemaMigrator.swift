import Foundation

/// Applies migrations in version order, each in its own transaction, and records them with
/// their checksum in `trackedmodels_migrations`, on SQLite or PostgreSQL.
///
/// A failing statement rolls its migration back and leaves the database at the last good
/// version. An applied migration whose SQL changed, or that is no longer in the set, stops
/// every operation until it is put back. Two processes migrating at once are safe: one
/// applies, the other waits (for SQLite's write lock, or PostgreSQL's advisory lock) and then
/// finds nothing to do.
///
/// A set of migrations is written for one engine (its ``dialect``), and runs only on that
/// engine's databases: keep each engine's set in a folder of its own, such as `Schemas/`
/// and `Schemas/postgres/`.
///
/// ```swift
/// let migrator = try SchemaMigrator(MigrationDirectory.migrations(in: schemasFolder))
/// let applied = try await migrator.migrate(.file("model.sqlite"))
/// ```
public struct SchemaMigrator: Sendable {
    /// The bookkeeping table.
    public static let tableName = "trackedmodels_migrations"
    public let migrations: [Migration]
    /// The engine the migrations are written for.
    public let dialect: MigrationDialect
    /// How long to wait for another process's lock on SQLite: 30 s.
    public var busyTimeout: Duration = .seconds(30)

    /// - Throws: ``MigrationError`` for duplicate versions, gaps, or a statement a migration
    ///   may not run.
    public init(_ migrations: [Migration], dialect: MigrationDialect = .sqlite) throws {
        self.migrations = try MigrationDirectory.validated(migrations, dialect: dialect)
        self.dialect = dialect
    }

    /// The version the set ends at (0 for an empty set).
    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Where a database stands.
    public struct Status: Sendable, Hashable {
        public var applied: [AppliedMigration]
        /// Migrations not applied yet, in order.
        public var pending: [Migration]
        /// Problems with what was applied (edited or missing files); empty when in sync.
        public var drift: [MigrationError]

        public var currentVersion: Int { applied.last?.version ?? 0 }
    }

    /// Reads where a database stands, without changing it (an SQLite file is left without a
    /// `-wal` or `-shm` file). A database without the bookkeeping table is at version 0.
    public func status(of database: DatabaseLocation) async throws -> Status {
        try checkDialect(of: database)
        switch database {
        case .file(let path):
            return status(of: try SQLiteMigrationStorage.appliedMigrations(readingAt: path, busyTimeout: busyTimeout))
        case .inMemory:
            return Status(applied: [], pending: migrations, drift: [])
        case .postgres(let url):
            let storage = try await PostgreSQLMigrationStorage.connect(url)
            defer { storage.close() }
            return status(of: try await storage.appliedMigrations())
        }
    }

    /// The migrations ``migrate(_:upTo:)`` would apply, in order, without applying them (all
    /// of them for an SQLite file that does not exist yet, which is not created).
    public func plan(for database: DatabaseLocation, upTo target: Int? = nil) async throws -> [Migration] {
        try checkDialect(of: database)
        let status: Status
        if case .file(let path) = database, !SQLiteMigrationStorage.exists(at: path) {
            status = Status(applied: [], pending: migrations, drift: [])
        } else {
            status = try await self.status(of: database)
        }
        if let first = status.drift.first { throw first }
        return try pending(status.pending, upTo: target)
    }

    /// Applies every pending migration up to `target` (the latest by default).
    ///
    /// - Returns: The migrations this call applied (empty when up to date, also when another
    ///   process applied them first).
    /// - Throws: ``MigrationError``: drift in what was applied (nothing runs), migrations
    ///   written for another engine, or a failing statement (its migration is rolled back;
    ///   earlier ones stay applied).
    @discardableResult
    public func migrate(_ database: DatabaseLocation, upTo target: Int? = nil) async throws -> [Migration] {
        try checkDialect(of: database)
        // An unknown target is refused before the database is opened, so that none is created.
        _ = try pending(migrations, upTo: target)
        let storage: any MigrationStorage = switch database {
        case .file(let path): try SQLiteMigrationStorage.writing(at: path, busyTimeout: busyTimeout)
        case .inMemory: throw MigrationError(code: .wrongDialect, message: "an in-memory database goes away as the migration ends; migrate a file, or a PostgreSQL database")
        case .postgres(let url): try await PostgreSQLMigrationStorage.connect(url)
        }
        defer { storage.close() }
        return try await migrate(in: storage, upTo: target)
    }

    private func migrate(in storage: some MigrationStorage, upTo target: Int?) async throws -> [Migration] {
        var applied: [Migration] = []
        while true {
            let next: Migration? = try await storage.inMigrationTransaction {
                let status = status(of: try await storage.appliedMigrations())
                if let first = status.drift.first { throw first }
                guard let migration = try pending(status.pending, upTo: target).first else { return nil }
                try await run(migration, in: storage, outcome: "the database stays at version \(migration.version - 1)")
                try await storage.record(migration)
                return migration
            }
            guard let next else { return applied }
            applied.append(next)
        }
    }

    /// Inside a migration transaction: applies every pending migration and records it, all in
    /// that one transaction (a copy's rows follow them in it).
    ///
    /// - Returns: The migrations applied.
    /// - Throws: ``MigrationError``: drift in what was applied, or a failing statement.
    func applyPending(in storage: some MigrationStorage) async throws -> [Migration] {
        let status = status(of: try await storage.appliedMigrations())
        if let first = status.drift.first { throw first }
        for migration in status.pending {
            try await run(migration, in: storage, outcome: "the transaction holds the rest too, so nothing was committed")
            try await storage.record(migration)
        }
        return status.pending
    }

    /// Refuses a database of another engine than the migrations are written for.
    private func checkDialect(of database: DatabaseLocation) throws {
        let engine = MigrationDialect(of: database)
        guard engine != dialect else { return }
        throw MigrationError(
            code: .wrongDialect,
            message: "these migrations are written for \(dialect.displayName), and the database is \(engine.displayName); use the \(engine.displayName) set (such as Schemas/\(engine == .postgres ? "postgres/" : ""))"
        )
    }

    // MARK: - Internals

    private func pending(_ pending: [Migration], upTo target: Int?) throws -> [Migration] {
        guard let target else { return pending }
        guard (0...latestVersion).contains(target) else {
            throw MigrationError(code: .unknownVersion, message: "there is no migration version \(target); use a version from 0 to \(latestVersion)")
        }
        return pending.filter { $0.version <= target }
    }

    /// - Parameter outcome: What a failure leaves, for its message.
    private func run(_ migration: Migration, in storage: some MigrationStorage, outcome: String) async throws {
        do {
            try await storage.run(migration)
        } catch let failure as FailedStatement {
            throw MigrationError(
                code: .statementFailed,
                message: "migration \(migration.fileName) failed at statement `\(failure.sql)`; \(outcome); fix the migration and run it again",
                file: migration.fileName,
                underlying: failure.error
            )
        }
    }

    private func status(of applied: [AppliedMigration]) -> Status {
        let byVersion = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        var drift: [MigrationError] = []
        for record in applied {
            let fileName = Migration(version: record.version, name: record.name, sql: "").fileName
            guard let migration = byVersion[record.version], migration.name == record.name else {
                drift.append(MigrationError(
                    code: .missingFile,
                    message: "applied migration \(fileName) is missing from the migrations folder; restore the file",
                    file: fileName
                ))
                continue
            }
            if migration.checksum != record.checksum {
                drift.append(MigrationError(
                    code: .checksumMismatch,
                    message: "migration \(fileName) was edited after it was applied (checksum \(migration.checksum), applied \(record.checksum)); restore it and put the change in a new migration",
                    file: fileName
                ))
            }
        }
        let appliedVersions = Set(applied.map(\.version))
        return Status(applied: applied, pending: migrations.filter { !appliedVersions.contains($0.version) }, drift: drift)
    }
}

extension MigrationError: Hashable {
    public static func == (lhs: MigrationError, rhs: MigrationError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.file == rhs.file
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}
