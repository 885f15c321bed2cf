public import Foundation
import TrackedModels

/// Commit-to-event latency across processes: another process commits bumps of one row, this
/// one hears them through its change feed.
///
/// The committing process prints, for each bump, its value and two `CLOCK_MONOTONIC` times:
/// before the bump, and after its `flush()` returned; the commit happened between them. This
/// process notes the same clock when the event arrives. The latency is reported against both:
/// the upper bound (event − before) includes the commit itself; the lower bound (event −
/// after) excludes the time the committing process took to hear of its own commit, and is
/// clamped at zero, because an event cannot precede the commit it reports (it arrives before the
/// committer's `flush()` returns when this process is the quicker one to hear of the commit).
///
/// On PostgreSQL a bare listener (``BareListener``) hears the same commits beside the store:
/// its notification's arrival, against the same two times, is the floor the store's own figure
/// stands on (its look at the log, the rows' read and the delivery come on top).
@MainActor
public struct ExternalLatencyBenchmark {
    /// Commits the other process makes.
    public var commits = 100
    /// The pause between two commits: longer than the poll interval (25 ms by default), so each
    /// commit is heard as its own event rather than merged with the next.
    public var gap: Duration = .milliseconds(50)
    /// A connection listening for the commits' notifications beside the store, when there is
    /// one (PostgreSQL).
    var bareListener: BareListener?

    public init() {}

    public struct Report: Sendable {
        public var commits: Int
        /// Against the time before the bump: includes the commit.
        public var medianMilliseconds: Double
        public var p99Milliseconds: Double
        /// Against the time the committer's flush returned, clamped at zero.
        public var lowerBoundMedianMilliseconds: Double
        public var lowerBoundP99Milliseconds: Double
        /// Events heard per commit (1 when every commit is its own event).
        public var eventsPerCommit: Double
        /// What a bare listener measured on the same commits; nil without one.
        public var floor: Floor?
    }

    /// When a bare listener heard the commits' notifications, against the same two times.
    public struct Floor: Sendable {
        /// The commits it heard.
        public var commits: Int
        /// From before the bump.
        public var medianMilliseconds: Double
        public var p99Milliseconds: Double
        /// From the flush returning, clamped at zero (a notification is sent as the commit
        /// ends, and may arrive before the committer hears that it ended).
        public var lowerBoundMedianMilliseconds: Double
        public var lowerBoundP99Milliseconds: Double
    }

    /// Runs the measurement on a database (a SQLite file's path, or a PostgreSQL URL) whose
    /// `rows` table holds row 0.
    ///
    /// - Parameter startCommitter: Starts the other process with the database, the number of
    ///   commits and the gap in milliseconds; it must print `VALUE BEFORE AFTER` per commit
    ///   (monotonic nanoseconds before the bump and after its flush returned).
    public func run(path: String, startCommitter: (_ path: String, _ commits: Int, _ gapMilliseconds: Int) throws -> (Process, Pipe)) async throws -> Report {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let location: DatabaseLocation = path.hasPrefix("postgres://") ? .postgres(path) : .file(path)
        let store = try await ModelStore.open(location, models: [BenchmarkRow.self], configuration: configuration)
        guard let row = try await store.async.find(BenchmarkRow.self, key: Int64(0)) else {
            throw BenchmarkError("the latency benchmark needs row 0 in \(store.filename)")
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
        let committed: [(value: Int64, before: UInt64, after: UInt64)] = lines.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, let value = Int64(parts[0]), let before = UInt64(parts[1]), let after = UInt64(parts[2]) else { return nil }
            return (value, before, after)
        }
        let deadline = ContinuousClock.now + .seconds(5)
        // Until the store heard the last commit, and the bare listener every commit's notification.
        while received[start + Int64(commits)] == nil || (bareListener?.arrivalTimes.count ?? committed.count) < committed.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        token.cancel()
        try await store.close()
        let heard = committed.compactMap { commit in received[commit.value].map { (commit, $0) } }
        guard !heard.isEmpty else {
            throw BenchmarkError("no commit of the other process was heard")
        }
        let upper = heard.map { Double(Int64($1) - Int64($0.before)) / 1e6 }.sorted()
        let lower = heard.map { Swift.max(0, Double(Int64($1) - Int64($0.after)) / 1e6) }.sorted()
        func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
            sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
        }
        let floor = bareListener.flatMap { listener -> Floor? in
            let heard = zip(committed, Self.match(committed, listener.arrivalTimes)).compactMap { commit, arrival in arrival.map { (commit, $0) } }
            guard !heard.isEmpty else { return nil }
            let upper = heard.map { Double(Int64($1) - Int64($0.before)) / 1e6 }.sorted()
            let lower = heard.map { Swift.max(0, Double(Int64($1) - Int64($0.after)) / 1e6) }.sorted()
            return Floor(
                commits: heard.count, medianMilliseconds: percentile(upper, 0.5), p99Milliseconds: percentile(upper, 0.99),
                lowerBoundMedianMilliseconds: percentile(lower, 0.5), lowerBoundP99Milliseconds: percentile(lower, 0.99)
            )
        }
        return Report(
            commits: committed.count,
            medianMilliseconds: percentile(upper, 0.5),
            p99Milliseconds: percentile(upper, 0.99),
            lowerBoundMedianMilliseconds: percentile(lower, 0.5),
            lowerBoundP99Milliseconds: percentile(lower, 0.99),
            eventsPerCommit: Double(events) / Double(max(committed.count, 1)),
            floor: floor
        )
    }

    /// The notification of each commit, in the order they were made: the first at or after its
    /// bump began that no earlier commit took (a transaction sends one as it commits, and they
    /// arrive in commit order, however late); nil for a commit none is left for.
    private static func match(_ committed: [(value: Int64, before: UInt64, after: UInt64)], _ arrivals: [UInt64]) -> [UInt64?] {
        var next = arrivals.startIndex
        return committed.map { commit in
            while next < arrivals.endIndex, arrivals[next] < commit.before { next += 1 }
            guard next < arrivals.endIndex else { return nil }
            defer { next += 1 }
            return arrivals[next]
        }
    }
}

/// A benchmark that could not measure what it set out to.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
