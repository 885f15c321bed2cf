import ArgumentParser
import Foundation
import TrackedModels

/// `--db` and `--schemas`, shared by every command that touches the database.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "The database file (default: $MODELCTL_DB, else ./model.sqlite).")
    var database: String?

    @Option(help: "A folder of NNNN_name.sql migrations to use instead of the built-in demo ones.")
    var schemas: String?

    /// The database path to use.
    var path: String {
        database ?? ProcessInfo.processInfo.environment["MODELCTL_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "model.sqlite"
    }

    /// The migrations: from --schemas, or the demo ones built in.
    func migrator() throws -> SchemaMigrator {
        if let schemas {
            return try SchemaMigrator(MigrationDirectory.migrations(in: schemas))
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
