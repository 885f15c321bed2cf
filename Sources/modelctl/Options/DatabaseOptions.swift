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
    /// only reads never creates one.
    func requireExistingDatabase(for operation: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIError(.missingInput, "\(operation) \(path): there is no such database; run `modelctl seed` first, or pass --db PATH")
        }
    }
}
