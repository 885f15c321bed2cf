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

    @Option(help: "How much each bump adds.")
    var by: Int64 = 1

    @Option(help: "How many bumps to make.")
    var times = 1

    func validate() throws {
        guard times >= 1 else { throw ValidationError("--times must be at least 1, not \(times)") }
    }

    func run() async throws {
        try await reportingErrors(operation: "bump", path: options.path) {
            try options.requireExistingDatabase(for: "bump")
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
        for _ in 0..<times where interruption.received == nil {
            try store.increment(\Row.count, of: row, by: by)
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
        if let status = interruption.exitStatus {
            FileHandle.standardError.write(Data("modelctl: bump interrupted; the bumps made so far are committed\n".utf8))
            print(committed)
            throw ExitCode(status)
        }
        print(committed)
    }
}
