import ArgumentParser
import Foundation
import TrackedModels

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the database file for damage (SQLite's integrity_check), reading only.",
        discussion: """
            Exits 0 and prints "ok" for an intact file; exits 65 with SQLite's findings for a \
            damaged one. Commands that write (seed, bump, migrate up) run the quicker \
            quick_check first and refuse a damaged file the same way.

            Example: modelctl check --db model.sqlite
            """
    )

    @OptionGroup var options: DatabaseOptions

    func run() async throws {
        try await reportingErrors(operation: "check", path: options.path) {
            guard !options.isPostgres else {
                throw CLIError(.usage, "check \(options.path): check reads SQLite files; a PostgreSQL server checks its own data (see its amcheck extension)")
            }
            try options.requireExistingDatabase(for: "check")
            try options.requireIntactDatabase(for: "check", thorough: true)
            print("ok: \(options.path) passed integrity_check")
        }
    }
}
