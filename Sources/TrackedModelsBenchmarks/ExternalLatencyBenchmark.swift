public import Foundation
import TrackedModels

/// Commit-to-event latency across processes: another process commits bumps of one row, this
/// one hears them through its change feed.
///
/// The committing process prints, after each `flush()` returns, the bump's value and the
/// `CLOCK_MONOTONIC` time; this process notes the same clock when the event arrives. Flush
/// returns just after COMMIT, so the figure slightly understates the true latency.
@MainActor
public struct ExternalLatencyBenchmark {
    /// Commits the other process makes.
    public var commits = 100
    /// The pause between two commits: longer than the poll interval (25 ms by default), so each
    /// commit is heard as its own event rather than merged with the next.
    public var gap: Duration = .milliseconds(50)

    public init() {}

    public struct Report: Sendable {
        public var commits: Int
        public var medianMilliseconds: Double
        public var p99Milliseconds: Double
        /// Events heard per commit (1 when every commit is its own event).
        public var eventsPerCommit: Double
    }

    /// Runs the measurement on a database file whose `rows` table holds row 0.
    ///
    /// - Parameter startCommitter: Starts the other process with the database path, the number
    ///   of commits and the gap in milliseconds; it must print `VALUE NANOSECONDS` per commit.
    public func run(path: String, startCommitter: (_ path: String, _ commits: Int, _ gapMilliseconds: Int) throws -> (Process, Pipe)) async throws -> Report {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.file(path), models: [BenchmarkRow.self], configuration: configuration)
        guard let row = try store.find(BenchmarkRow.self, key: Int64(0)) else {
            throw BenchmarkError("the latency benchmark needs row 0 in \(path)")
        }
        let start = row.count
        var received: [Int64: UInt64] = [:]
        var events = 0
        let token = try store.subscribe(to: .object(row, \BenchmarkRow.count)) { event in
            let now = monotonicNanoseconds()
            events += 1
            if let value = event.change(of: \BenchmarkRow.count)?.new { received[value] = now }
        }
        let (process, output) = try startCommitter(path, commits, gap.wholeMilliseconds)
        let lines = await Task.detached {
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }.value
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("the committing process failed with status \(process.terminationStatus)")
        }
        let committed: [(value: Int64, time: UInt64)] = lines.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Int64(parts[0]), let time = UInt64(parts[1]) else { return nil }
            return (value, time)
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while received[start + Int64(commits)] == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        token.cancel()
        try await store.close()
        let latencies = committed.compactMap { commit in
            received[commit.value].map { Double(Int64($0) - Int64(commit.time)) / 1e6 }
        }.sorted()
        guard !latencies.isEmpty else {
            throw BenchmarkError("no commit of the other process was heard")
        }
        return Report(
            commits: committed.count,
            medianMilliseconds: latencies[latencies.count / 2],
            p99Milliseconds: latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))],
            eventsPerCommit: Double(events) / Double(max(committed.count, 1))
        )
    }
}

/// A benchmark that could not measure what it set out to.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
