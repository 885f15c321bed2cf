import Foundation
import TrackedModels

/// A live list against re-running its query: `count > 0` sorted by `count` descending over a
/// table whose counts are `id % 100` (99 rows in 100 match), bumped at random rows.
///
/// The live side is `row.count += 1` with the list kept current (re-evaluating the one row,
/// publishing to its observer); the same bumps with the list closed (`bare_ns_per_bump`) tell
/// what the list adds to a bump. The baseline is what a re-fetching observation does (GRDB's
/// `ValueObservation`, SQLiteData's `@FetchAll`): the bump, then the same query run again in
/// SQLite and every matching row read into its object (the raw-SQL fetch, on committed data). Both are measured in the same run; each figure is the
/// median of several rounds.
///
/// ```swift
/// let report = try await LiveListBenchmark(rows: 100_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct LiveListBenchmark {
    public struct Report: Sendable {
        public var rows: Int
        /// Rows in the list.
        public var members: Int
        public var liveNsPerBump: Double
        /// The same bumps with no list open (nobody listening): what every bump costs.
        public var bareNsPerBump: Double
        public var listNotificationsPerBump: Double
        public var rerunNsPerBump: Double

        public var table: String {
            "live list (count > 0 by count desc, \(members) of \(rows) rows): \(Figures.format(liveNsPerBump)) ns/bump, "
                + "\(Figures.format(listNotificationsPerBump, digits: 2)) list notifications/bump; the bump with no list: \(Figures.format(bareNsPerBump)) ns; re-running the query: "
                + "\(Figures.format(rerunNsPerBump)) ns/bump (\(Figures.format(rerunNsPerBump / liveNsPerBump))× the live list)"
        }

        public var json: String {
            "{\"rows\": \(rows), \"members\": \(members), \"live_ns_per_bump\": \(Figures.format(liveNsPerBump)), \"bare_ns_per_bump\": \(Figures.format(bareNsPerBump)), "
                + "\"list_notifications_per_bump\": \(Figures.format(listNotificationsPerBump, digits: 3)), \"rerun_ns_per_bump\": \(Figures.format(rerunNsPerBump))}"
        }
    }

    public var rows: Int
    public var bumps = 20_000
    public var rounds = 5

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        let database = TemporaryDatabase(in: folder, named: "live")
        defer { database.remove() }
        let (store, objects) = try await database.demoStore(rows: rows)
        var generator = SplitMix(seed: 42)
        let (members, live, notificationsPerBump) = try await measureLive(store: store, objects: objects, generator: &generator)

        // The same bumps with the list gone: what the list adds is the difference.
        let bare = try await measureBumps(store: store, objects: objects, generator: &generator)

        // The re-run: bump, then the list's query again, every matching row read. Some two
        // million rows read per round: 20 re-runs at 100,000 rows, a few seconds.
        let reruns = max(2, min(200, 2_000_000 / max(rows, 1)))
        var rerun: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<reruns {
                objects[Int(generator.next() % UInt64(rows))].count += 1
                let matching = try store.fetch(BenchmarkRow.self, where: "count > 0", orderBy: "count DESC, id")
                precondition(!matching.isEmpty, "the re-run found nothing")
            }
            rerun.append((ContinuousClock.now - start).timeInterval * 1e9 / Double(reruns))
        }
        try await store.close()
        return Report(
            rows: rows, members: members, liveNsPerBump: live, bareNsPerBump: bare,
            listNotificationsPerBump: notificationsPerBump, rerunNsPerBump: Figures.median(rerun)
        )
    }

    /// ns per bump with the list open and one `onChange` observer (the median of the rounds),
    /// the list's members when it opened, and the list's notifications per bump.
    private func measureLive(
        store: ModelStore, objects: [BenchmarkRow], generator: inout SplitMix
    ) async throws -> (members: Int, nsPerBump: Double, notificationsPerBump: Double) {
        let descriptor = FetchDescriptor<BenchmarkRow>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)])
        let list = try store.results(for: descriptor)
        let members = list.count
        var notifications = 0
        let subscription = list.onChange { _ in notifications += 1 }
        let live = try await measureBumps(store: store, objects: objects, generator: &generator)
        subscription.cancel()
        withExtendedLifetime(list) {}
        return (members, live, Double(notifications) / Double(bumps * rounds))
    }

    /// ns per bump of random rows (the median of the rounds), flushing between rounds
    /// (outside the clock).
    private func measureBumps(store: ModelStore, objects: [BenchmarkRow], generator: inout SplitMix) async throws -> Double {
        var samples: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<bumps { objects[Int(generator.next() % UInt64(rows))].count += 1 }
            samples.append((ContinuousClock.now - start).timeInterval * 1e9 / Double(bumps))
            try await store.flush()
        }
        return Figures.median(samples)
    }
}

/// A small, seeded random number generator, so that every run bumps the same rows.
struct SplitMix: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
