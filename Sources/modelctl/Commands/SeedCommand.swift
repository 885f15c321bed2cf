import ArgumentParser
import Foundation
import TrackedModels

struct SeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Migrate the database and fill it with the demo rows and lists.",
        discussion: """
            Inserts lists {id: L, title: "List L"} for L = 1 to 10, and rows {id: N, title: "Row N", \
            count: 0, list_id: N mod 10 + 1} for N = 0, 1, ... in one transaction. A table that \
            already has rows is left alone unless --reset replaces them (and the lists).

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
            try await options.requireWritableDemoDatabase(for: "seed", allowingEmpty: true)
            try await refuseExistingRows()
            try await seed()
        }
    }

    /// Refuses a table that already has rows (without `--reset`) reading only, before anything
    /// is migrated or set up in the database.
    private func refuseExistingRows() async throws {
        guard !reset else { return }
        if case .file(let path) = options.location, !FileManager.default.fileExists(atPath: path) { return }
        let tables = try await options.query(options.isPostgres
            ? "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'rows'"
            : "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rows'")
        guard tables.rows.first?.first == .integer(1),
              case .integer(let existing)? = try await options.query("SELECT count(*) FROM rows").rows.first?.first
        else { return }
        try refuse(existing: existing)
    }

    private func refuse(existing: Int64) throws {
        guard existing > 0, !reset else { return }
        throw CLIError(.dataError, "seed \(options.path): table rows already has \(existing) rows; pass --reset to replace them")
    }

    /// Migrates, then streams the rows into one transaction with the old rows' deletion.
    ///
    /// A signal while migrating lets the migrations finish (each is its own unit), then stops
    /// before any row: exit 130/143. A signal while rows are inserted rolls the whole
    /// seed back, old rows kept: exit 130/143. A signal once every row is handed over, during the
    /// final commit, comes too late to stop it: the seed is committed and says so (exit 0).
    @MainActor private func seed() async throws {
        let interruption = Interruption()
        let start = ContinuousClock.now
        try await options.migrator().migrate(options.location)
        if let status = interruption.exitStatus {
            FileHandle.standardError.write(Data("modelctl: seed interrupted after migrating; no row was inserted\n".utf8))
            throw ExitCode(status)
        }
        var configuration = options.storeConfiguration
        // The seed commits only as its one unit: nothing flushes on its own, so the old rows'
        // deletion, handed back by a cancelled insert, cannot commit alone before it is discarded.
        configuration.flushInterval = .seconds(86_400)
        let store = try await ModelStore.open(options.location, models: [Row.self, TodoList.self], configuration: configuration)
        let existing = try await store.async.fetchCount(FetchDescriptor<Row>())
        try refuse(existing: Int64(existing))
        // One unit: the old rows and lists go only if the new ones commit.
        if existing > 0 { try await store.async.deleteAll(Row.self) }
        try await store.async.deleteAll(TodoList.self)
        let lists = (1...TodoList.demoCount).map { TodoList(id: $0, title: "List \($0)") }
        for list in lists { try store.insert(list) }
        let progress = ProgressBar(total: rows, label: "seeding")
        let count = rows
        let insertion = Task {
            try await store.bulkInsert(contentsOf: (0..<count).lazy.map { id in
                progress.update(id + 1)
                let key = Int64(id)
                return Row(id: key, title: "Row \(id)", count: 0, list: lists[Int(TodoList.demoKey(ofRow: key) - 1)])
            })
        }
        interruption.whenSignalled { insertion.cancel() }
        do {
            try await insertion.value
        } catch {
            // Nothing of a failed seed may commit later, when the store goes away.
            store.discardPendingChanges()
            try? await store.close()
            if error is CancellationError, let status = interruption.exitStatus {
                FileHandle.standardError.write(Data("\nmodelctl: seed interrupted; no row was inserted or deleted\n".utf8))
                throw ExitCode(status)
            }
            throw error
        }
        progress.finish(note: "committed")
        try await store.close()
        interruption.stop()
        if interruption.received != nil {
            FileHandle.standardError.write(Data("modelctl: a signal came during the final commit, too late to stop it; the seed is committed\n".utf8))
        }
        let elapsed = ContinuousClock.now - start
        print("seeded \(rows) rows in \(lists.count) lists into \(options.path) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
    }
}
