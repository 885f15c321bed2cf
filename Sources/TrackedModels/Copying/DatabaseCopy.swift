/// Copies the models' tables from one database to another, SQLite or PostgreSQL either way, in
/// one transaction on the target: all of it commits, or none of it.
///
/// The copy reads the source in one snapshot and streams each table a batch at a time, so its
/// memory does not grow with the data. On the target, in the same transaction, it first
/// applies the pending migrations (recording them as `migrate` does), then checks every table
/// against its model, copies the rows with their keys (tables that others point at first; a
/// link to a row not copied yet, a parent after its child or a cycle between tables, is set in
/// a second pass once every row is in), reads every table back, and moves each key sequence
/// past the keys copied: the copy commits only if each table holds as many rows as the
/// source, with the same checksum.
///
/// The source must be at the version the target's migrations end at (the same versions and
/// names: each engine has its own SQL). A target that holds rows is refused unless
/// ``replacesRows``; nothing is written to it then.
///
/// ```swift
/// let migrations = try SchemaMigrator(MigrationDirectory.migrations(in: "Schemas/postgres", dialect: .postgres), dialect: .postgres)
/// let copy = DatabaseCopy(models: [Row.self, TodoList.self], migrations: migrations)
/// let report = try await copy.run(from: .file("app.sqlite"), to: .postgres("postgres://app@db.internal/app"))
/// for table in report.tables { print(table.name, table.rows, table.checksum) }
/// ```
public struct DatabaseCopy: Sendable {
    /// The tables to copy: the models' own, in an order that puts every table before the
    /// tables whose to-one relationships point at it.
    let schemas: [TableSchema]
    /// The target's migrations; `nil` to create missing tables from the models instead.
    public let migrations: SchemaMigrator?
    /// Whether rows already in the target's tables are deleted first (in the same
    /// transaction); by default a target with rows is refused.
    public var replacesRows = false

    /// - Parameters:
    ///   - models: The models whose tables are copied.
    ///   - migrations: The target engine's migrations, applied before the rows are copied; with
    ///     `nil`, tables missing on the target are created from the models, as
    ///     ``ModelStore/Configuration/createsMissingTables`` does, and no migration history is
    ///     recorded (the source's is not copied: a later `migrate` would start at version 1).
    public init(models: [any TrackedModel.Type], migrations: SchemaMigrator? = nil) {
        schemas = Self.referencedFirst(models.map { $0._$schema })
        self.migrations = migrations
    }

    /// How far a copy is, handed to the progress handler after each batch.
    public struct Progress: Sendable, Hashable {
        /// The table being copied.
        public var table: String
        /// Rows copied so far, over every table.
        public var copiedRows: Int
        /// Rows to copy, over every table.
        public var totalRows: Int
    }

    /// What a copy committed.
    public struct Report: Sendable, Hashable {
        /// Each table copied, in the order copied.
        public var tables: [Table]
        /// The migrations applied to the target before the rows (empty when it was up to date).
        public var appliedMigrations: [Migration]

        public struct Table: Sendable, Hashable {
            public var name: String
            public var rows: Int
            /// The sum, in four 64-bit lanes, of each row's SHA-256 (so whatever the order the
            /// rows are read in), as 64 hexadecimal digits: the same on both databases.
            public var checksum: String
        }
    }

    /// Copies the tables, all or nothing.
    ///
    /// - Parameters:
    ///   - source: The database to read: a file (never created nor written) or a PostgreSQL
    ///     database.
    ///   - target: The database to fill: a file (created when missing) or a PostgreSQL
    ///     database.
    ///   - progress: Called after each batch, on the copying task.
    /// - Throws: ``CopyError`` (the same database on both sides, a target with rows, a source
    ///   at another version, a value the target cannot hold, a read-back that differs);
    ///   ``StoreError`` (``StoreError/Code/schemaMismatch`` naming the side, or what the
    ///   database reported); ``MigrationError`` for a target whose applied migrations drifted
    ///   or a migration that failed; `CancellationError` when the task is cancelled. The target
    ///   is left as it was (the key sequences move only as the copy commits), and an SQLite
    ///   target this call created is removed.
    @discardableResult
    public func run(from source: DatabaseLocation, to target: DatabaseLocation, progress: (Progress) -> Void = { _ in }) async throws -> Report {
        if let migrations, MigrationDialect(of: target) != migrations.dialect {
            throw MigrationError(
                code: .wrongDialect,
                message: "the migrations are written for \(migrations.dialect.displayName), and the target \(target) is \(MigrationDialect(of: target).displayName); pass the target engine's set"
            )
        }
        let reading = try await Self.openSource(source)
        defer { reading.close() }
        return try await reading.inSnapshot {
            let counts = try await checkSource(reading, at: source)
            let writing = try await Self.openTarget(target)
            do {
                guard try await writing.identity() != reading.identity() else {
                    throw CopyError(code: .sameDatabase, message: "the source and the target are the same database (\(target)); copy to another file or database")
                }
                var copying = TableCopying(schemas: schemas, source: reading, target: writing, targetName: target.description, sourceCounts: counts)
                let report: Report
                if let migrations {
                    let storage = writing.migrationStorage
                    report = try await storage.inMigrationTransaction {
                        let applied = try await migrations.applyPending(in: storage)
                        return Report(tables: try await copying.fill(replacing: replacesRows, progress: progress), appliedMigrations: applied)
                    }
                } else {
                    report = try await writing.inTransaction {
                        for schema in schemas { try await writing.createTableIfMissing(schema) }
                        return Report(tables: try await copying.fill(replacing: replacesRows, progress: progress), appliedMigrations: [])
                    }
                }
                writing.close(keeping: true)
                return report
            } catch {
                writing.close(keeping: false)
                throw error
            }
        }
    }

    /// Checks that the source is at the migrations' version and fits the models; its row
    /// counts, by table.
    private func checkSource(_ reading: some CopySource, at location: DatabaseLocation) async throws -> [Int] {
        if let migrations {
            let applied = try await reading.appliedMigrations().map { "\($0.version) \($0.name)" }
            let expected = migrations.migrations.map { "\($0.version) \($0.name)" }
            guard applied == expected else {
                let version = applied.count
                throw CopyError(
                    code: .versionMismatch,
                    message: "the source \(location) is at version \(version) (\(applied.last ?? "no migration")), and the target's migrations end at version \(migrations.latestVersion) (\(expected.last ?? "none")); "
                        + (version < migrations.latestVersion && applied == Array(expected.prefix(version))
                            ? "migrate the source first (modelctl migrate up)"
                            : "the two sets differ; copy with the migrations the source was made with")
                )
            }
        }
        var differences: [SchemaDifference] = []
        for schema in schemas { differences += try await reading.differences(of: schema) }
        guard differences.isEmpty else { throw StoreError.schemaMismatch(differences, in: "the source \(location)") }
        var counts: [Int] = []
        for schema in schemas { counts.append(try await reading.rowCount(of: schema)) }
        return counts
    }

    /// The schemas in an order where every table comes after the tables its to-one
    /// relationships point at (a cycle keeps the given order for what is left).
    static func referencedFirst(_ schemas: [TableSchema]) -> [TableSchema] {
        var placed: [TableSchema] = []
        var left = schemas
        while !left.isEmpty {
            let names = Set(left.map(\.name))
            let ready = left.firstIndex { schema in
                schema.relationshipColumns.allSatisfy { column in
                    let target = schema.columns[column].reference!.target._$schema.name
                    return target == schema.name || !names.contains(target)
                }
            } ?? left.startIndex
            placed.append(left.remove(at: ready))
        }
        return placed
    }

    private static func openSource(_ location: DatabaseLocation) async throws -> any CopySource {
        switch location {
        case .file(let path): try SQLiteCopyEndpoint.reading(path)
        case .inMemory: throw CopyError(code: .sameDatabase, message: "an in-memory database is private to its store, so there is nothing to copy from; copy from a file or a PostgreSQL database")
        case .postgres(let url): try await PostgreSQLCopyEndpoint.connect(url)
        }
    }

    private static func openTarget(_ location: DatabaseLocation) async throws -> any CopyTarget {
        switch location {
        case .file(let path): try SQLiteCopyEndpoint.writing(path)
        case .inMemory: throw CopyError(code: .sameDatabase, message: "an in-memory database goes away as the copy ends; copy to a file or a PostgreSQL database")
        case .postgres(let url): try await PostgreSQLCopyEndpoint.connect(url)
        }
    }
}

/// Why a ``DatabaseCopy`` committed nothing, where the databases themselves did not fail.
///
/// ```swift
/// do {
///     try await copy.run(from: .file("app.sqlite"), to: target)
/// } catch let error as CopyError where error.code == .targetNotEmpty {
///     copy.replacesRows = true  // after asking
/// }
/// ```
public struct CopyError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        public var description: String { name }

        /// The source and the target are one database (or an in-memory one, which cannot be
        /// either).
        public static let sameDatabase = Code(name: "sameDatabase")
        /// A target table holds rows, and ``DatabaseCopy/replacesRows`` is false.
        public static let targetNotEmpty = Code(name: "targetNotEmpty")
        /// The source's applied migrations are not the target's set.
        public static let versionMismatch = Code(name: "versionMismatch")
        /// A source value does not fit its model's column (a type the model does not store,
        /// NULL in a non-optional column, text that is not UTF-8, a NaN).
        public static let valueNotCopyable = Code(name: "valueNotCopyable")
        /// Read back, a target table does not hold what was copied into it.
        public static let verificationFailed = Code(name: "verificationFailed")
    }

    public var code: Code
    /// What went wrong and what to do, in a sentence or two.
    public var message: String

    public var description: String { message }
}

extension StoreError {
    /// A schema mismatch that names the database it was found in (the source or the target).
    static func schemaMismatch(_ differences: [SchemaDifference], in database: String) -> StoreError {
        var error = schemaMismatch(differences)
        error.message = "\(database) does not match the models (\(differences.count) difference\(differences.count == 1 ? "" : "s")); migrate it, or pass the migrations it was made with"
        return error
    }
}
