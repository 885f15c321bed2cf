import ArgumentParser
import Foundation
import TrackedModels

struct SeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Migrate the database and fill it with the demo rows.",
        discussion: """
            Inserts rows {id: N, title: "Row N", count: 0} for N = 0, 1, ... in one transaction. \
            A table that already has rows is left alone unless --reset replaces them.

            Example: modelctl seed --rows 1000
            """
    )

    @OptionGroup var options: DatabaseOptions

    @Option(parsing: .unconditional, help: "How many rows to insert, from 0 to 10,000,000.")
    var rows = 1_000

    @Flag(help: "Replace the rows of a non-empty table.")
    var reset = false

    func validate() throws {
        guard (0...10_000_000).contains(rows) else { throw ValidationError("--rows must be from 0 to 10,000,000, not \(rows)") }
    }

    func run() async throws {
        try await reportingErrors(operation: "seed", path: options.path) {
            try options.refuseFolder(for: "seed")
            try options.requireWritableDemoDatabase(for: "seed", allowingEmpty: true)
            try await seed()
        }
    }

    @MainActor private func seed() async throws {
        let interruption = Interruption()
        let start = ContinuousClock.now
        try options.migrator().migrate(databaseAt: options.path)
        let store = try ModelStore(.file(options.path), models: [Row.self], configuration: options.storeConfiguration)
        let existing = try store.count(Row.self)
        if existing > 0, !reset {
            throw CLIError(.dataError, "seed \(options.path): table rows already has \(existing) rows; pass --reset to replace them")
        }
        let progress = ProgressBar(total: rows, label: "preparing")
        var objects: [Row] = []
        objects.reserveCapacity(rows)
        for id in 0..<rows {
            if interruption.received != nil { break }
            objects.append(Row(id: Int64(id), title: "Row \(id)", count: 0))
            progress.update(id + 1)
        }
        progress.finish(note: "committing")
        if let status = interruption.exitStatus {
            try await store.close()
            FileHandle.standardError.write(Data("modelctl: seed interrupted before commit; nothing was written\n".utf8))
            throw ExitCode(status)
        }
        // One unit: the old rows go only if the new ones commit.
        try store.transaction {
            if existing > 0 { try store.deleteAll(Row.self) }
            try store.insert(contentsOf: objects)
        }
        do {
            try await store.flush()
        } catch {
            // Nothing of a failed seed may commit later, when the store goes away.
            store.discardPendingChanges()
            throw error
        }
        try await store.close()
        let elapsed = ContinuousClock.now - start
        print("seeded \(rows) rows into \(options.path) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
    }
}
