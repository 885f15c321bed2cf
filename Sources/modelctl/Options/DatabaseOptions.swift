import ArgumentParser
import Foundation
import Logging
import TrackedModels

/// `--db` and `--schemas`, shared by every command that touches the database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "The database: a file, or a postgres://user:password@host:port/database URL (default: $MODELCTL_DB, else ./model.sqlite).")
    var database: String?

    @Option(help: "The folder of NNNN_name.sql migrations, PostgreSQL's in its postgres/ folder (default: ./Schemas when it exists, else the demo ones built in).")
    var schemas: String?

    @Flag(help: "Log what the store does on its own (busy retries, failed commits, refused changes, resets, log pruning) to stderr.")
    var verbose = false

    /// The store's configuration: the defaults, logging to stderr with --verbose.
    var storeConfiguration: ModelStore.Configuration {
        var configuration = ModelStore.Configuration()
        if verbose {
            var logger = Logger(label: "modelctl") { label in StreamLogHandler.standardError(label: label) }
            logger.logLevel = Logger.Level.debug
            configuration.logger = logger
        }
        return configuration
    }

    /// Runs `check` on a store that installs nothing on the database (no change log), then
    /// closes it: a read through the models, so that a value they cannot read is refused
    /// before a command's own store installs its change log, leaving the schema as it was.
    @MainActor func checkThroughTheModels(_ check: (ModelStore) async throws -> Void) async throws {
        var configuration = storeConfiguration
        configuration.observesExternalChanges = false
        let store = try await ModelStore.open(location, models: [Row.self, TodoList.self], configuration: configuration)
        do {
            try await check(store)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }

    /// `--db`, else `$MODELCTL_DB`, else `model.sqlite`: a file path or a PostgreSQL URL.
    private var argument: String {
        database ?? ProcessInfo.processInfo.environment["MODELCTL_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "model.sqlite"
    }

    /// The database to use: a PostgreSQL one for a `postgres://` (or `postgresql://`) URL,
    /// else a file.
    var location: DatabaseLocation {
        let argument = argument
        let scheme = argument.prefix { $0 != ":" }.lowercased()
        return (scheme == "postgres" || scheme == "postgresql") && argument.contains("://") ? .postgres(argument) : .file(argument)
    }

    /// Whether the database is a PostgreSQL one.
    var isPostgres: Bool { MigrationDialect(of: location) == .postgres }

    /// How messages name the database: the path, or the URL without its password.
    var path: String { location.description }

    /// The folder the migrations come from: `--schemas`, else `./Schemas` when it exists (as
    /// dbmate, Flyway and sqlx use theirs); for PostgreSQL its `postgres/` folder when it has
    /// one. `nil` for the demo set built into modelctl.
    var schemasFolder: String? {
        let base: String? = if let schemas {
            schemas
        } else if Self.isFolder("Schemas") {
            "Schemas"
        } else {
            nil
        }
        guard let base, isPostgres else { return base }
        let postgres = (base.hasSuffix("/") ? base : base + "/") + "postgres"
        return Self.isFolder(postgres) ? postgres : base
    }

    private static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Which migration set a command uses, in words, for the `migrate` commands to say.
    var migrationSetDescription: String {
        if let folder = schemasFolder { return "migrations from \(folder)/" }
        return "the demo migrations built into modelctl (no ./Schemas folder here; pass --schemas DIR to use another)"
    }

    /// The migrations of ``schemasFolder``, or the demo ones built in, for the database's engine.
    func migrator() throws -> SchemaMigrator {
        let dialect = MigrationDialect(of: location)
        if let folder = schemasFolder {
            return try SchemaMigrator(MigrationDirectory.migrations(in: folder, dialect: dialect), dialect: dialect)
        }
        return try SchemaMigrator(DemoSchemas.migrations(for: dialect), dialect: dialect)
    }

    /// Fails with exit code 66 when the database file does not exist, so that a command that
    /// only reads never creates one, or when the path is a folder. (A PostgreSQL database that
    /// does not exist is refused when connecting, with 66 too.)
    func requireExistingDatabase(for operation: String) throws {
        guard case .file(let path) = location else { return }
        try refuseFolder(for: operation)
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError(.missingInput, "\(operation) \(path): there is no such database; run `modelctl seed` first, or pass --db PATH")
        }
    }

    /// Fails with exit code 66 when `--db` names a folder, or a file in a folder that does not
    /// exist (a command that writes creates the file, never its folder).
    func refuseFolder(for operation: String) throws {
        guard case .file(let path) = location else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError(.missingInput, "\(operation) \(path): is a directory, not a database file; pass --db PATH to a file")
        }
        let folder = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(.missingInput, "\(operation) \(path): the folder \(folder) does not exist; create it, or pass --db PATH in a folder that does")
        }
    }

    /// Runs read-only SQL on the database (SQLite's or PostgreSQL's, as the database is),
    /// which must exist.
    func query(_ sql: String, _ arguments: [SQLValue] = [], limit: Int? = nil) async throws -> DatabaseReader.Result {
        switch location {
        case .postgres(let url):
            let reader = try await PostgresDatabaseReader.connect(url)
            defer { reader.close() }
            return try await reader.query(sql, arguments, limit: limit)
        case .file(let path):
            return try DatabaseReader(path: path).query(sql, arguments, limit: limit)
        case .inMemory:
            throw CLIError(.usage, "an in-memory database holds nothing to read; pass --db PATH")
        }
    }

    /// The placeholder of the `index`th argument (from 1) in the database's SQL: `?` or `$n`.
    func placeholder(_ index: Int) -> String {
        isPostgres ? "$\(index)" : "?"
    }

    /// Checks the file for damage, reading only: `integrity_check` when `thorough`, else the
    /// quicker `quick_check`. A damaged file is refused (65) with SQLite's findings. (A
    /// PostgreSQL server keeps its own data sound: nothing to check here.)
    func requireIntactDatabase(for operation: String, thorough: Bool = false) throws {
        guard case .file(let path) = location else { return }
        try requireIntact(DatabaseReader(path: path), for: operation, thorough: thorough)
    }

    /// Both checks a writing command makes before it writes, reading only: a modelctl database
    /// (or, with `allowingEmpty`, an empty one), and (a file) not damaged.
    func requireWritableDemoDatabase(for operation: String, allowingEmpty: Bool = false) async throws {
        if case .file(let path) = location {
            guard FileManager.default.fileExists(atPath: path) else { return }
            try requireIntact(DatabaseReader(path: path), for: operation, thorough: false)
        }
        try await requireDemoDatabase(for: operation, allowingEmpty: allowingEmpty)
    }

    private func requireIntact(_ reader: DatabaseReader, for operation: String, thorough: Bool) throws {
        let pragma = thorough ? "integrity_check" : "quick_check"
        let findings: [String]
        do {
            findings = try reader.query("PRAGMA \(pragma)").rows.compactMap { row -> String? in
                if case .text(let text) = row.first, text != "ok" { text } else { nil }
            }
        } catch let error as StoreError where error.code == .notADatabase {
            // So damaged that the check itself stops: that is its finding.
            findings = ["\(pragma) could not finish: \(error.message)"]
        }
        guard findings.isEmpty else {
            throw CLIError(.dataError, "\(operation) \(path): the file is damaged (\(pragma) found \(findings.count) problem\(findings.count == 1 ? "" : "s")); nothing was changed. Restore it from a backup, or rebuild it with `modelctl seed --reset` on a new file\n  " + findings.prefix(10).joined(separator: "\n  "))
        }
    }

    /// Checks, reading only, that an existing database is a demo database (or an empty one,
    /// for `seed` and `migrate up` to fill), before a command writes to it: a foreign one is
    /// refused (78) without being changed.
    ///
    /// A file is marked by its `application_id`; a PostgreSQL database by the comment on its
    /// `rows` table (`COMMENT ON TABLE rows`, set by the demo migrations).
    ///
    /// - Parameter allowingEmpty: Whether a database with no tables at all is fine.
    func requireDemoDatabase(for operation: String, allowingEmpty: Bool = false) async throws {
        if case .file(let path) = location, !FileManager.default.fileExists(atPath: path) { return }
        // One line: an error quotes it.
        let facts = try await query(isPostgres
            ? """
            SELECT (SELECT obj_description(to_regclass('rows'), 'pg_class')),
                   (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'rows'),
                   (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename NOT LIKE 'trackedmodels\\_%')
            """
            : "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rows'), (SELECT count(*) FROM sqlite_master WHERE type = 'table')"
        ).rows.first ?? []
        guard facts.count == 3, case .integer(let rows) = facts[1], case .integer(let tables) = facts[2] else { return }
        switch facts[0] {
        case .integer(let applicationID) where applicationID != 0 && applicationID != DemoSchemas.applicationID:
            throw CLIError(.configuration, "\(operation) \(path): the file belongs to another application (application_id \(applicationID)); nothing was changed. Pass --db PATH to a modelctl database")
        case .text(let comment) where comment != DemoSchemas.postgresMark:
            throw CLIError(.configuration, "\(operation) \(path): its rows table belongs to another application (its comment says \"\(comment)\"); nothing was changed. Pass --db URL to a modelctl database")
        default:
            break
        }
        if rows == 0, !(allowingEmpty && tables == 0) {
            throw CLIError(.configuration, "\(operation) \(path): the database has no `rows` table, so it is not a modelctl database; nothing was changed. Pass --db to a demo database, or create one with `modelctl seed`")
        }
    }
}
