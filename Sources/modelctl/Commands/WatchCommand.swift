import ArgumentParser
import Foundation
import TrackedModels

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print each change to the demo rows as it happens, also those of other processes.",
        discussion: """
            One line per event. --format json prints JSON lines such as
            {"table": "rows", "row": 42, "kind": "update", "origin": "external", "columns": {"count": {"old": 0, "new": 1}}}
            Once every later commit will be heard, it prints "watching PATH" on stderr.
            Ctrl-C ends it cleanly (exit 0).

            Example: modelctl watch --row 42 --columns count --count 1 --timeout 10
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @OptionGroup var options: DatabaseOptions

    @Option(name: .customLong("row"), help: "Watch only this row (repeatable).")
    var rows: [Int64] = []

    @Option(help: "Watch only these columns, comma-separated (such as count,title).")
    var columns: String?

    @Option(help: "How to print events.")
    var format: Format = .text

    @Option(parsing: .unconditional, help: "Exit after this many events.")
    var count: Int?

    @Option(parsing: .unconditional, help: "Exit after this many seconds, at most 31,536,000 (a year).")
    var timeout: Double?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1, not \(count)") }
        if let timeout, !(timeout > 0 && timeout <= 31_536_000) {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most 31,536,000 (a year), not \(timeout)")
        }
        _ = try columnKeyPaths()
    }

    /// The key paths of --columns; all columns when it is absent.
    private func columnKeyPaths() throws -> [PartialKeyPath<Row>] {
        let known: [String: PartialKeyPath<Row>] = ["id": \Row.id, "title": \Row.title, "count": \Row.count]
        guard let columns else { return [] }
        return try columns.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let keyPath = known[name] else {
                throw ValidationError("rows has no column '\(name)'; use one of: \(known.keys.sorted().joined(separator: ", "))")
            }
            return keyPath
        }
    }

    func run() async throws {
        try await reportingErrors(operation: "watch", path: options.path) {
            try options.requireExistingDatabase(for: "watch")
            try await options.requireDemoDatabase(for: "watch")
            try await watch()
        }
    }

    /// Refuses a watched row that does not exist, reading only: before a store opens (and
    /// installs its change log) on the file.
    private func refuseMissingRows() async throws {
        for id in rows where try await options.query("SELECT 1 FROM rows WHERE id = \(options.placeholder(1))", [.integer(id)]).rows.isEmpty {
            throw noSuchRow(id)
        }
    }

    /// Refuses a watched row the model cannot read (a value of the wrong type in a table that
    /// is not STRICT, say): before the watching store installs its change log.
    @MainActor private func refuseUnreadableRows() async throws {
        try await options.checkThroughTheModels { store in _ = try await watchedRows(in: store) }
    }

    /// The watched rows (every row without `--row`), as objects of `store`.
    @MainActor private func watchedRows(in store: ModelStore) async throws -> [Row] {
        guard !rows.isEmpty else { return try await store.async.fetch(FetchDescriptor<Row>()) }
        var watched: [Row] = []
        for id in rows {
            guard let row = try await store.async.find(Row.self, key: id) else { throw noSuchRow(id) }
            watched.append(row)
        }
        return watched
    }

    private func noSuchRow(_ id: Int64) -> CLIError {
        CLIError(.dataError, "watch \(options.path): there is no row \(id), so nothing would ever be printed; pick an existing row (see `modelctl query`)")
    }

    private enum Item: Sendable {
        case event(ChangeEvent)
        case stop
    }

    @MainActor private func watch() async throws {
        let (items, sink) = AsyncStream.makeStream(of: Item.self)
        let interruption = Interruption()
        interruption.whenSignalled { sink.yield(.stop) }
        try await refuseMissingRows()
        try await refuseUnreadableRows()
        let store = try await ModelStore.open(options.location, models: [Row.self, TodoList.self], configuration: options.storeConfiguration)
        // Hold the watched rows: the store knows the values of objects someone holds, so their
        // events carry old values.
        let watched = try await watchedRows(in: store)
        let keyPaths = try columnKeyPaths()
        let wanted = Set(keyPaths.compactMap { Row._$columnIndex(of: $0) })
        var tokens: [FeedToken] = []
        let forward: (ChangeEvent) -> Void = { event in
            guard wanted.isEmpty || event.kind != .update || event.changes.contains(where: { wanted.contains($0.index) }) else { return }
            sink.yield(.event(event))
        }
        if rows.isEmpty {
            tokens.append(try store.subscribe(to: .table(Row.self), forward))
        } else {
            for id in rows { tokens.append(try store.subscribe(to: .row(id, of: Row.self), forward)) }
        }
        // From here on no commit slips past (the store reads the change log from where it
        // opened it): a script may start writing once it reads this line.
        FileHandle.standardError.write(Data("watching \(options.path)\n".utf8))

        let timer = timeout.map { seconds in
            Task { try await Task.sleep(for: .seconds(seconds)); sink.yield(.stop) }
        }
        var printed = 0
        for await item in items {
            guard case .event(let event) = item else { break }
            let line = format == .json ? EventFormatter.json(event, columns: wanted) : EventFormatter.text(event, columns: wanted)
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
            printed += 1
            if let count, printed >= count { break }
        }
        // Explicit uses: an optimized build may otherwise end the subscriptions and the signal
        // handlers right after their last mention above.
        timer?.cancel()
        tokens.forEach { $0.cancel() }
        withExtendedLifetime(watched) {}
        interruption.stop()
        try await store.close()
    }
}
