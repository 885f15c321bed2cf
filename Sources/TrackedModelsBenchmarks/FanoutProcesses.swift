import Foundation
import TrackedModels

/// One watcher of the fan-out benchmark (``FanoutBenchmark``), in a process of its own: a store
/// that holds every row and hears every change to the table.
///
/// Protocol, on standard input and output: it prints `ready` once it holds the rows and is
/// subscribed. Each change it hears of a row's `title` (``FanoutWriter/title(writer:commit:before:)``)
/// is a sample: which writer's which commit, and the `CLOCK_MONOTONIC` times before the change
/// and when it was heard. On `stop <sum>` it waits (up to 30 s) until the counts it shows add
/// up to `sum`, then prints `samples` and the samples (`writer.commit.before.heard`, in
/// nanoseconds), `final` and each row's count in key order, and `cpu` and the CPU time it used
/// from `ready` until it showed every commit, in microseconds.
@MainActor
public enum FanoutWatcher {
    public static func run(url: String) async throws {
        let store = try await ModelStore.open(.postgres(url), models: [BenchmarkRow.self])
        let rows = try await store.async.fetch(FetchDescriptor<BenchmarkRow>(sortBy: [SortDescriptor(\.id)]))
        var samples: [String] = []
        samples.reserveCapacity(1 << 16)
        let token = try store.subscribe(to: .table(BenchmarkRow.self)) { event in
            let now = monotonicNanoseconds()
            guard let title = event.change(of: \BenchmarkRow.title)?.new, title.hasPrefix("t") else { return }
            samples.append("\(title.dropFirst()).\(now)")
        }
        let cpuAtReady = processCPUMicroseconds()
        say("ready")
        let line = await Task.detached { readLine() }.value
        guard let line, line.hasPrefix("stop "), let sum = Int64(line.dropFirst(5)) else {
            throw BenchmarkError("the fan-out watcher expected `stop SUM`, and read \(line ?? "nothing")")
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while rows.reduce(0, { $0 + $1.count }) != sum, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let cpu = processCPUMicroseconds() - cpuAtReady
        token.cancel()
        say("samples " + samples.joined(separator: " "))
        say("final " + rows.map { String($0.count) }.joined(separator: " "))
        say("cpu \(cpu)")
        try await store.close()
    }
}

/// One writer of the fan-out benchmark, in a process of its own: for a fixed time, commits
/// `perCommit` distinct rows at a time, as fast as it can or one commit every `interval`
/// (started on that schedule, at once when behind it), each row's count incremented and
/// its title naming the writer, the commit and the time before the change
/// (``title(writer:commit:before:)``). Writer `index` of `writers` changes only the rows whose
/// position leaves that remainder, as app servers that own their rows: writers never wait for
/// each other's row locks. Prints `committed <rows> <commits> <seconds>` at the end, the seconds
/// those commits took, and `returned` and the `CLOCK_MONOTONIC` time each commit's `flush()`
/// returned, in nanoseconds: the moment the commit was acknowledged.
@MainActor
public enum FanoutWriter {
    /// What one writer does.
    public struct Plan: Sendable {
        public var url: String
        /// Distinct rows each commit changes.
        public var perCommit: Int
        public var duration: Duration
        /// This writer's index among all `writers`: it changes the rows whose position leaves
        /// this remainder.
        public var index: Int
        public var writers: Int
        /// The time from one commit's start to the next's; nil: as fast as it can.
        public var interval: Duration?

        public init(url: String, perCommit: Int, duration: Duration, index: Int, writers: Int, interval: Duration?) {
            (self.url, self.perCommit, self.duration, self.index, self.writers, self.interval) = (url, perCommit, duration, index, writers, interval)
        }
    }

    public static func run(_ plan: Plan) async throws {
        let (url, perCommit, duration, index, writers) = (plan.url, plan.perCommit, plan.duration, plan.index, plan.writers)
        var configuration = ModelStore.Configuration()
        configuration.observesExternalChanges = false
        configuration.flushInterval = .seconds(3_600)
        configuration.pendingThreshold = .max
        let store = try await ModelStore.open(.postgres(url), models: [BenchmarkRow.self], configuration: configuration)
        let all = try await store.async.fetch(FetchDescriptor<BenchmarkRow>(sortBy: [SortDescriptor(\.id)]))
        let rows = all.indices.filter { $0 % writers == index }.map { all[$0] }
        guard rows.count >= perCommit else { throw BenchmarkError("the fan-out writer needs \(perCommit) rows, and has \(rows.count) of the table's \(all.count)") }
        var random = SplitMix(seed: UInt64(index + 1))
        var committed = 0
        var commits = 0
        var returned: [UInt64] = []
        let start = ContinuousClock.now
        let end = start + duration
        var next = start
        while ContinuousClock.now < end {
            if let interval = plan.interval {
                guard next < end else { break }
                try await Task.sleep(until: next, clock: .continuous)
                next += interval
            }
            var picked = Set<Int>()
            while picked.count < perCommit { picked.insert(Int(random.next() % UInt64(rows.count))) }
            for position in picked {
                let row = rows[position]
                row.title = title(writer: index, commit: commits, before: monotonicNanoseconds())
                try store.increment(\BenchmarkRow.count, of: row, by: 1)
            }
            try await store.flush()
            returned.append(monotonicNanoseconds())
            committed += perCommit
            commits += 1
        }
        let seconds = (ContinuousClock.now - start).timeInterval
        try await store.close()
        say("committed \(committed) \(commits) \(seconds)")
        say("returned " + returned.map(String.init).joined(separator: " "))
    }

    /// A changed row's title: `t<writer>.<commit>.<nanoseconds before the change>`.
    static func title(writer: Int, commit: Int, before: UInt64) -> String {
        "t\(writer).\(commit).\(before)"
    }
}

/// Writes a line to standard output at once (unbuffered: the benchmark waits for it).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
