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
            try await checkAndBump()
        }
    }

    @MainActor private func checkAndBump() async throws {
        // Listening from the start: a signal while the file is checked stops the bump too.
        let interruption = Interruption()
        try options.requireExistingDatabase(for: "bump")
        try await options.requireWritableDemoDatabase(for: "bump")
        // Refused before a store opens (and installs its change log) on the database.
        switch try await committedRow() {
        case .missing: throw noSuchRow
        case .count(let count): try requireNoOverflow(from: count)
        case .unlike: break
        }
        // Refused by the models (a table they do not fit, a value of the row they cannot read)
        // before the bump's store installs its change log.
        try await options.checkThroughTheModels { store in _ = try await store.async.find(Row.self, key: id) }
        try await bump(interruption)
    }

    private enum CommittedRow {
        case count(Int64)
        case missing
        /// The table is not what the models say (no integer `count` column).
        case unlike
    }

    /// The row as committed, read on a read-only connection.
    private func committedRow() async throws -> CommittedRow {
        let result = try await options.query("SELECT * FROM rows WHERE id = \(options.placeholder(1))", [.integer(id)])
        guard let column = result.columns.firstIndex(of: "count") else { return .unlike }
        guard let row = result.rows.first else { return .missing }
        guard case .integer(let count) = row[column] else { return .unlike }
        return .count(count)
    }

    private func interrupted(_ status: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("modelctl: bump interrupted; nothing was bumped\n".utf8))
        return ExitCode(status)
    }

    private var noSuchRow: CLIError {
        CLIError(.dataError, "bump \(options.path): there is no row \(id); nothing changed (see `modelctl query`)")
    }

    private func requireNoOverflow(from count: Int64) throws {
        let (total, overflowsTotal) = by.multipliedReportingOverflow(by: Int64(times))
        guard !overflowsTotal, !count.addingReportingOverflow(total).overflow else {
            throw CLIError(.dataError, "bump \(options.path): adding \(by) × \(times) to row \(id)'s count \(count) overflows a 64-bit integer; nothing changed")
        }
    }

    @MainActor private func bump(_ interruption: Interruption) async throws {
        if let status = interruption.exitStatus { throw interrupted(status) }
        let store = try await ModelStore.open(options.location, models: [Row.self, TodoList.self], configuration: options.storeConfiguration)
        // Checked again: the row may have changed since the read-only check.
        guard let row = try await store.async.find(Row.self, key: id) else { throw noSuchRow }
        try requireNoOverflow(from: row.count)
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
            throw interrupted(interruption.exitStatus ?? 130)
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
