import ArgumentParser
import Foundation
import Logging
import TrackedModels

/// `--db` and `--schemas`, shared by every command that touches the database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "The database file (default: $MODELCTL_DB, else ./model.sqlite).")
    var database: String?

    @Option(help: "The folder of NNNN_name.sql migrations (default: ./Schemas when it exists, else the demo ones built in).")
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

    /// The database path to use.
    var path: String {
        database ?? ProcessInfo.processInfo.environment["MODELCTL_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "model.sqlite"
    }

    /// The folder the migrations come from: `--schemas`, else `./Schemas` when it exists (as
    /// dbmate, Flyway and sqlx use theirs); `nil` for the demo set built into modelctl.
    var schemasFolder: String? {
        if let schemas { return schemas }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: "Schemas", isDirectory: &isDirectory) && isDirectory.boolValue ? "Schemas" : nil
    }

    /// Which migration set a command uses, in words, for the `migrate` commands to say.
    var migrationSetDescription: String {
        if let folder = schemasFolder { return "migrations from \(folder)/" }
        return "the demo migrations built into modelctl (no ./Schemas folder here; pass --schemas DIR to use another)"
    }

    /// The migrations of ``schemasFolder``, or the demo ones built in.
    func migrator() throws -> SchemaMigrator {
        if let folder = schemasFolder {
            return try SchemaMigrator(MigrationDirectory.migrations(in: folder))
        }
        return try SchemaMigrator(DemoSchemas.migrations)
    }

    /// Fails with exit code 66 when the database file does not exist, so that a command that
    /// only reads never creates one, or when the path is a folder.
    func requireExistingDatabase(for operation: String) throws {
        try refuseFolder(for: operation)
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError(.missingInput, "\(operation) \(path): there is no such database; run `modelctl seed` first, or pass --db PATH")
        }
    }

    /// Fails with exit code 66 when `--db` names a folder, or a file in a folder that does not
    /// exist (a command that writes creates the file, never its folder).
    func refuseFolder(for operation: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw CLIError(.missingInput, "\(operation) \(path): is a directory, not a database file; pass --db PATH to a file")
        }
        let folder = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(.missingInput, "\(operation) \(path): the folder \(folder) does not exist; create it, or pass --db PATH in a folder that does")
        }
    }

    /// Checks the file for damage, reading only: `integrity_check` when `thorough`, else the
    /// quicker `quick_check`. A damaged file is refused (65) with SQLite's findings.
    func requireIntactDatabase(for operation: String, thorough: Bool = false) throws {
        try requireIntact(DatabaseReader(path: path), for: operation, thorough: thorough)
    }

    /// Both checks a writing command makes before it writes, on one read-only connection:
    /// a modelctl database (or, with `allowingEmpty`, an empty one), and not damaged.
    func requireWritableDemoDatabase(for operation: String, allowingEmpty: Bool = false) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        let reader = try DatabaseReader(path: path)
        try requireIntact(reader, for: operation, thorough: false)
        try requireDemo(reader, for: operation, allowingEmpty: allowingEmpty)
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

    /// Checks, reading only, that an existing file is a demo database (or an empty one, for
    /// `seed` and `migrate up` to fill), before a command writes to it: a foreign file is refused
    /// (78) without being changed.
    ///
    /// - Parameter allowingEmpty: Whether a file with no tables at all is fine.
    func requireDemoDatabase(for operation: String, allowingEmpty: Bool = false) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        try requireDemo(DatabaseReader(path: path), for: operation, allowingEmpty: allowingEmpty)
    }

    private func requireDemo(_ reader: DatabaseReader, for operation: String, allowingEmpty: Bool) throws {
        // One line: an error quotes it.
        let facts = try reader.query(
            "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rows'), (SELECT count(*) FROM sqlite_master WHERE type = 'table')"
        ).rows.first ?? []
        guard facts.count == 3, case .integer(let applicationID) = facts[0], case .integer(let rows) = facts[1], case .integer(let tables) = facts[2] else { return }
        if applicationID != 0, applicationID != DemoSchemas.applicationID {
            throw CLIError(.configuration, "\(operation) \(path): the file belongs to another application (application_id \(applicationID)); nothing was changed. Pass --db PATH to a modelctl database")
        }
        if rows == 0, !(allowingEmpty && tables == 0) {
            throw CLIError(.configuration, "\(operation) \(path): the file has no `rows` table, so it is not a modelctl database; nothing was changed. Pass --db PATH to a demo database, or create one with `modelctl seed`")
        }
    }
}
