import ArgumentParser
import Foundation
import TrackedModels

struct BumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bump",
        abstract: "Increment a row's count and print the new value.",
        discussion: """
            Uses the library's increment (count = count + N), so bumps from concurrent processes \
            all count. The change is committed before the new value is printed.

            Example: modelctl bump 42 --by 2 --times 10
            """
    )

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The row's id.")
    var id: Int64

    @Option(parsing: .unconditional, help: "How much each bump adds (negative to subtract).")
    var by: Int64 = 1

    @Option(parsing: .unconditional, help: "How many bumps to make, from 1 to 1,000,000,000.")
    var times = 1

    func validate() throws {
        guard (1...1_000_000_000).contains(times) else {
            throw ValidationError("--times must be from 1 to 1,000,000,000, not \(times)")
        }
    }

    func run() async throws {
        try await reportingErrors(operation: "bump", path: options.path) {
            try options.requireExistingDatabase(for: "bump")
            try options.requireWritableDemoDatabase(for: "bump")
            try await bump()
        }
    }

    @MainActor private func bump() async throws {
        let interruption = Interruption()
        let store = try ModelStore(.file(options.path), models: [Row.self], configuration: options.storeConfiguration)
        guard let row = try store.find(Row.self, key: id) else {
            throw CLIError(.dataError, "bump \(options.path): there is no row \(id); nothing changed (see `modelctl query`)")
        }
        let (total, overflowsTotal) = by.multipliedReportingOverflow(by: Int64(times))
        guard !overflowsTotal, !row.count.addingReportingOverflow(total).overflow else {
            throw CLIError(.dataError, "bump \(options.path): adding \(by) × \(times) to row \(id)'s count \(row.count) overflows a 64-bit integer; nothing changed")
        }
        // One unit: all the bumps commit, or (interrupted, or failing) none of them.
        do {
            try store.transaction {
                for _ in 0..<times {
                    if interruption.received != nil { throw CancellationError() }
                    try store.increment(\Row.count, of: row, by: by)
                }
            }
        } catch is CancellationError {
            try await store.close()
            FileHandle.standardError.write(Data("modelctl: bump interrupted; nothing was bumped\n".utf8))
            throw ExitCode(interruption.exitStatus ?? 130)
        }
        do {
            try await store.flush()
        } catch {
            // Nothing of a failed bump may commit later, when the store goes away.
            store.discardPendingChanges()
            throw error
        }
        let committed = row.count
        try await store.close()
        interruption.stop()
        print(committed)
    }
}
