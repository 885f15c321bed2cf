import ArgumentParser
import Foundation
import TrackedModels
import TrackedModelsBenchmarks

/// The other process of `modelctl bench`'s latency measurement: bumps a row, one commit at a
/// time, and prints each new value with the monotonic time before the bump and the time its
/// flush returned, between which the commit happened.
struct CommitTimedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_commit-timed",
        abstract: "Internal: the committing side of `modelctl bench`.",
        shouldDisplay: false
    )

    @Option(name: .customLong("db")) var path: String
    @Option var commits: Int
    @Option var gap: Int

    func run() async throws {
        let shown = path.hasPrefix("postgres://") ? DatabaseLocation.postgres(path).description : path
        try await reportingErrors(operation: "bench", path: shown) {
            try await commit()
        }
    }

    @MainActor private func commit() async throws {
        var configuration = ModelStore.Configuration()
        configuration.observesExternalChanges = false
        let location: DatabaseLocation = path.hasPrefix("postgres://") ? .postgres(path) : .file(path)
        let store = try await ModelStore.open(location, models: [BenchmarkFileRow.self], configuration: configuration)
        guard let row = try await store.async.find(BenchmarkFileRow.self, key: Int64(0)) else { throw CLIError(.dataError, "bench \(store.filename): no row 0") }
        for _ in 0..<commits {
            try await Task.sleep(for: .milliseconds(gap))
            let before = monotonicNanoseconds()
            try store.increment(\BenchmarkFileRow.count, of: row)
            try await store.flush()
            let after = monotonicNanoseconds()
            FileHandle.standardOutput.write(Data("\(row.count) \(before) \(after)\n".utf8))
        }
        try await store.close()
    }
}

/// A watcher process of `modelctl bench --watchers N` (see ``FanoutWatcher``).
struct FanoutWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "_fanout-watch", abstract: "Internal: a watcher of `modelctl bench --watchers`.", shouldDisplay: false)

    @Option(name: .customLong("db")) var url: String

    func run() async throws {
        try await reportingErrors(operation: "bench", path: DatabaseLocation.postgres(url).description) { try await FanoutWatcher.run(url: url) }
    }
}

/// A writer process of `modelctl bench --watchers N` (see ``FanoutWriter``).
struct FanoutWriteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "_fanout-write", abstract: "Internal: a writer of `modelctl bench --watchers`.", shouldDisplay: false)

    @Option(name: .customLong("db")) var url: String
    @Option var perCommit: Int
    @Option var milliseconds: Int
    @Option var index: Int
    @Option var writers: Int
    /// Microseconds from one commit's start to the next's; 0: as fast as it can.
    @Option var intervalMicroseconds = 0

    /// The arguments that start this command with a plan.
    static func arguments(_ plan: FanoutWriter.Plan) -> [String] {
        let milliseconds = Int(plan.duration.timeInterval * 1_000)
        // At least 1 µs: 0 says "as fast as it can".
        let interval = plan.interval.map { max(1, Int($0.timeInterval * 1_000_000)) } ?? 0
        return ["_fanout-write", "--db", plan.url, "--per-commit", String(plan.perCommit), "--milliseconds", String(milliseconds),
                "--index", String(plan.index), "--writers", String(plan.writers), "--interval-microseconds", String(interval)]
    }

    func run() async throws {
        try await reportingErrors(operation: "bench", path: DatabaseLocation.postgres(url).description) {
            let plan = FanoutWriter.Plan(
                url: url, perCommit: perCommit, duration: .milliseconds(milliseconds), index: index, writers: writers,
                interval: intervalMicroseconds > 0 ? .microseconds(intervalMicroseconds) : nil
            )
            try await FanoutWriter.run(plan)
        }
    }
}

/// A row of the file `modelctl bench` measures on: the benchmark's own table, without the demo
/// dataset's lists.
@Tracked(table: "rows")
final class BenchmarkFileRow {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int64
}
