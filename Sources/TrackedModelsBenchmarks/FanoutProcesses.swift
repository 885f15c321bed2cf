import Foundation
import TrackedModels

/// One watcher of the fan-out benchmark (``FanoutBenchmark``), in a process of its own: a store
/// that holds every row and hears every change to the table.
///
/// Protocol, on standard input and output: it prints `ready` once it holds the rows and is
/// subscribed. Each change it hears of a row's `title` (the writer's `CLOCK_MONOTONIC` time
/// before the change, `t<nanoseconds>`) is a latency sample. On `stop <sum>` it waits (up to
/// 30 s) until the counts it shows add up to `sum`, then prints `samples` and the samples in
/// microseconds, and `final` and each row's count in key order.
@MainActor
public enum FanoutWatcher {
    public static func run(url: String) async throws {
        let store = try await ModelStore.open(.postgres(url), models: [BenchmarkRow.self])
        let rows = try await store.async.fetch(FetchDescriptor<BenchmarkRow>(sortBy: [SortDescriptor(\.id)]))
        var samples: [UInt64] = []
        samples.reserveCapacity(1 << 16)
        let token = try store.subscribe(to: .table(BenchmarkRow.self)) { event in
            let now = monotonicNanoseconds()
            guard let title = event.change(of: \BenchmarkRow.title)?.new, title.hasPrefix("t"), let before = UInt64(title.dropFirst()), now >= before else { return }
            samples.append((now - before) / 1_000)
        }
        say("ready")
        let line = await Task.detached { readLine() }.value
        guard let line, line.hasPrefix("stop "), let sum = Int64(line.dropFirst(5)) else {
            throw BenchmarkError("the fan-out watcher expected `stop SUM`, and read \(line ?? "nothing")")
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while rows.reduce(0, { $0 + $1.count }) != sum, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        token.cancel()
        say("samples " + samples.map(String.init).joined(separator: " "))
        say("final " + rows.map { String($0.count) }.joined(separator: " "))
        try await store.close()
    }
}

/// One writer of the fan-out benchmark, in a process of its own: for a fixed time, commits
/// `perCommit` distinct rows at a time, as fast as it can, each row's count incremented and
/// its title set to the time before the change (`t<nanoseconds>`). Writer `index` of `writers`
/// changes only the rows whose position leaves that remainder, as app servers that own their
/// rows: writers never wait for each other's row locks. Prints `committed <rows> <commits>
/// <seconds>` at the end, the seconds those commits took.
@MainActor
public enum FanoutWriter {
    public static func run(url: String, perCommit: Int, duration: Duration, index: Int, writers: Int) async throws {
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
        let start = ContinuousClock.now
        let end = start + duration
        while ContinuousClock.now < end {
            var picked = Set<Int>()
            while picked.count < perCommit { picked.insert(Int(random.next() % UInt64(rows.count))) }
            for index in picked {
                let row = rows[index]
                row.title = "t\(monotonicNanoseconds())"
                try store.increment(\BenchmarkRow.count, of: row, by: 1)
            }
            try await store.flush()
            committed += perCommit
            commits += 1
        }
        let seconds = (ContinuousClock.now - start).timeInterval
        try await store.close()
        say("committed \(committed) \(commits) \(seconds)")
    }
}

/// Writes a line to standard output at once (unbuffered: the benchmark waits for it).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
