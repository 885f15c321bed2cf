import ArgumentParser
import Foundation
import TrackedModels

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply, plan, check and create schema migrations.",
        subcommands: [Status.self, Up.self, Plan.self, Verify.self, New.self],
        defaultSubcommand: Status.self
    )
}

extension MigrateCommand {
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the database's version, and what is pending or drifted.")

        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await reportingErrors(operation: "migrate status", path: options.path) {
                try options.requireExistingDatabase(for: "migrate status")
                let migrator = try options.migrator()
                let status = try await migrator.status(of: options.location)
                print("using \(options.migrationSetDescription)")
                print("version \(status.currentVersion) of \(migrator.latestVersion)")
                for migration in status.applied {
                    print("  applied  \(Migration(version: migration.version, name: migration.name, sql: "").fileName)  \(migration.appliedAt)")
                }
                for migration in status.pending { print("  pending  \(migration.fileName)") }
                for problem in status.drift { print("  drift    \(problem.message)") }
            }
        }
    }

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply pending migrations, each in its own transaction.",
            discussion: "A failing migration is rolled back and the database stays at the last good version (exit 65)."
        )

        @OptionGroup var options: DatabaseOptions

        @Option(help: "Stop at this version instead of the latest.")
        var to: Int?

        func run() async throws {
            try await reportingErrors(operation: "migrate up", path: options.path) {
                try options.refuseFolder(for: "migrate up")
                let migrator = try options.migrator()
                if case .file(let path) = options.location, FileManager.default.fileExists(atPath: path) {
                    try options.requireIntactDatabase(for: "migrate up")
                }
                print("using \(options.migrationSetDescription)")
                let applied = try await migrator.migrate(options.location, upTo: to)
                for migration in applied { print("applied \(migration.fileName)") }
                // Once a migration has committed, no later read decides the outcome: the version
                // is the last one applied, read again only when nothing was.
                if let last = applied.last {
                    print("now at version \(last.version)")
                } else {
                    print("already at version \(try await migrator.status(of: options.location).currentVersion)")
                }
            }
        }
    }

    struct Plan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print what `migrate up` would run, without running it.")

        @OptionGroup var options: DatabaseOptions

        @Option(help: "Plan up to this version instead of the latest.")
        var to: Int?

        func run() async throws {
            try await reportingErrors(operation: "migrate plan", path: options.path) {
                let migrator = try options.migrator()
                let plan = try await migrator.plan(for: options.location, upTo: to)
                print("-- using \(options.migrationSetDescription)")
                if plan.isEmpty { print("-- nothing to apply") }
                for migration in plan {
                    print("-- \(migration.fileName)")
                    print(migration.sql.trimmingCharacters(in: .whitespacesAndNewlines))
                }
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that applied migrations match their files; exit 78 on any drift.",
            discussion: "Pending migrations are not drift: verify passes on a database that is behind."
        )

        @OptionGroup var options: DatabaseOptions

        func run() async throws {
            try await reportingErrors(operation: "migrate verify", path: options.path) {
                try options.requireExistingDatabase(for: "migrate verify")
                let status = try await options.migrator().status(of: options.location)
                if let first = status.drift.first {
                    for problem in status.drift.dropFirst() {
                        FileHandle.standardError.write(Data("modelctl: migrate verify \(options.path): \(problem.message)\n".utf8))
                    }
                    throw first
                }
                print("in sync with \(options.migrationSetDescription): \(status.applied.count) applied, \(status.pending.count) pending")
            }
        }
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the next migration file in the schemas folder (./Schemas by default, ./Schemas/postgres for a PostgreSQL database).",
            discussion: "Example: modelctl migrate new add_note_to_rows"
        )

        @OptionGroup var options: DatabaseOptions

        @Argument(help: "The migration's name: lowercase letters, digits and underscores.")
        var name: String

        func validate() throws {
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
                throw ValidationError("'\(name)' is not a migration name; use lowercase letters, digits and underscores, such as add_note_to_rows")
            }
        }

        func run() async throws {
            let folder = options.schemasFolder ?? (options.isPostgres ? "Schemas/postgres" : "Schemas")
            try await reportingErrors(operation: "migrate new", path: folder) {
                guard FileManager.default.fileExists(atPath: folder) else {
                    throw CLIError(.missingInput, "migrate new: there is no folder \(folder); create it or pass --schemas DIR")
                }
                let existing = try MigrationDirectory.migrations(in: folder, dialect: MigrationDialect(of: options.location))
                let migration = Migration(version: (existing.last?.version ?? 0) + 1, name: name, sql: "")
                let path = URL(fileURLWithPath: folder).appendingPathComponent(migration.fileName).path
                let template = "-- \(migration.fileName): describe the change, then write its SQL.\n"
                guard FileManager.default.createFile(atPath: path, contents: Data(template.utf8)) else {
                    throw CLIError(.ioError, "migrate new: cannot write \(path); check the folder's permissions")
                }
                print(path)
            }
        }
    }
}
