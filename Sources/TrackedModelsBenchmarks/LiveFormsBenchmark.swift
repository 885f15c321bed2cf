import CSQLite
import Foundation
import TrackedModels

/// Live sections, aggregates and a moving window against computing the same answer afresh,
/// on a table whose counts are `id % 100`, bumped at random rows (as ``LiveListBenchmark``).
///
/// - Sections: every row, by title, in sections by `count` (a hundred sections or so): a bump
///   moves its row into the next section. The baseline bumps, then steps through `SELECT id,
///   count FROM rows ORDER BY count, title`, the rows a re-fetch must read, sorted.
/// - Aggregates: `count` of `count > 0`, `sum(count)` and `maximum(count)` kept live; the
///   baseline bumps, then runs the one SQL statement that computes all three (`SELECT
///   count(*) FILTER (WHERE count > 0), sum(count), max(count) FROM rows`), the cheapest
///   re-run a re-fetching observation could make. Grouped: `count` grouped by `count`,
///   against `SELECT count, count(*) FROM rows GROUP BY count`.
/// - Window: a live list of `count > 0` by `count` descending showing 50 rows; a change is a
///   bump, a move is `moveWindow` to a random offset; the baseline is a fetch of the window.
///
/// ```swift
/// let report = try await LiveFormsBenchmark(rows: 100_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct LiveFormsBenchmark {
    public struct Figure: Sendable {
        public var rows: Int
        public var nsPerChange: Double
        public var rerunNs: Double
        public var nsPerMove: Double?

        var json: String {
            "{\"rows\": \(rows), \"ns_per_change\": \(Figures.format(nsPerChange)), \"rerun_ns\": \(Figures.format(rerunNs))"
                + (nsPerMove.map { ", \"ns_per_move\": \(Figures.format($0))" } ?? "") + "}"
        }
    }

    public struct Report: Sendable {
        public var sections: Figure
        public var aggregates: Figure
        public var groupedAggregate: Figure
        public var window: Figure

        public var table: String {
            "live sections (\(sections.rows) rows by count): \(Figures.format(sections.nsPerChange)) ns/bump; "
                + "reading them afresh: \(Figures.format(sections.rerunNs)) ns (\(Figures.format(sections.rerunNs / sections.nsPerChange))×)\n"
                + "live count grouped by count: \(Figures.format(groupedAggregate.nsPerChange)) ns/bump; "
                + "computing it afresh: \(Figures.format(groupedAggregate.rerunNs)) ns (\(Figures.format(groupedAggregate.rerunNs / groupedAggregate.nsPerChange))×)\n"
                + "live aggregates (count, sum, max over \(aggregates.rows) rows): \(Figures.format(aggregates.nsPerChange)) ns/bump; "
                + "computing them afresh: \(Figures.format(aggregates.rerunNs)) ns (\(Figures.format(aggregates.rerunNs / aggregates.nsPerChange))×)\n"
                + "moving window (50 of \(window.rows) rows): \(Figures.format(window.nsPerChange)) ns/bump, "
                + "\(Figures.format(window.nsPerMove ?? .nan)) ns/move; fetching the window afresh: \(Figures.format(window.rerunNs)) ns "
                + "(\(Figures.format(window.rerunNs / (window.nsPerMove ?? .nan)))× a move)"
        }

        /// `"sections": {...}, "aggregates": {...}, "grouped_aggregate": {...}, "window": {...}`,
        /// for the bench's JSON object.
        public var jsonMembers: String {
            "\"sections\": \(sections.json), \"aggregates\": \(aggregates.json), \"grouped_aggregate\": \(groupedAggregate.json), \"window\": \(window.json)"
        }
    }

    public var rows: Int
    public var bumps = 20_000
    public var rounds = 5

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        let database = TemporaryDatabase(in: folder, named: "forms")
        defer { database.remove() }
        let (store, objects) = try await database.demoStore(rows: rows)
        var generator = SplitMix(seed: 7)
        let reruns = max(2, min(200, 20_000_000 / max(rows, 1)))

        // Each form is released before the next is measured.
        let sections = try await measureSections(store: store, objects: objects, generator: &generator, reruns: reruns, path: database.path)
        let (aggregateChange, aggregateRerun) = try await measureAggregates(store: store, objects: objects, generator: &generator, reruns: reruns, path: database.path)
        let grouped = try await measureGroupedAggregate(store: store, objects: objects, generator: &generator, reruns: reruns, path: database.path)

        // The window.
        var descriptor = FetchDescriptor<BenchmarkRow>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)])
        descriptor.fetchLimit = 50
        let page = try store.results(for: descriptor)
        let members = try store.fetchCount(FetchDescriptor<BenchmarkRow>(predicate: #Predicate { $0.count > 0 }))
        let windowChange = try await measure(rounds: rounds, times: bumps, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
        }
        var moved = 0
        let windowMove = try await measure(rounds: rounds, times: bumps, store: store) {
            try page.moveWindow(offset: Int(generator.next() % UInt64(max(members - 50, 1))), limit: 50)
            moved += page.count
        }
        precondition(moved > 0, "the window showed nothing")
        let windowRerun = try await measure(rounds: rounds, times: reruns, store: store) {
            descriptor.fetchOffset = Int(generator.next() % UInt64(max(members - 50, 1)))
            let fetched = try store.fetch(descriptor)
            precondition(!fetched.isEmpty, "the window's fetch found nothing")
        }
        try await store.close()
        return Report(
            sections: Figure(rows: rows, nsPerChange: sections.change, rerunNs: sections.rerun),
            aggregates: Figure(rows: rows, nsPerChange: aggregateChange, rerunNs: aggregateRerun),
            groupedAggregate: Figure(rows: rows, nsPerChange: grouped.change, rerunNs: grouped.rerun),
            window: Figure(rows: rows, nsPerChange: windowChange, rerunNs: windowRerun, nsPerMove: windowMove)
        )
    }

    /// ns per bump with every row live in sections by `count`, and ns per re-run of the SQL that
    /// reads them sorted.
    private func measureSections(
        store: ModelStore, objects: [BenchmarkRow], generator: inout SplitMix, reruns: Int, path: String
    ) async throws -> (change: Double, rerun: Double) {
        let sections = try store.results(for: FetchDescriptor<BenchmarkRow>(sortBy: [SortDescriptor(\.title)]), sectionedBy: \.count)
        let change = try await measure(rounds: rounds, times: bumps, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
        }
        precondition(sections.reduce(0) { $0 + $1.count } == rows, "the sections do not hold every row")
        try await store.flush()
        let reader = try RawReader(path: path, sql: "SELECT id, count FROM rows ORDER BY count, title")
        let rerun = try await measure(rounds: rounds, times: reruns, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
            reader.run()
        }
        withExtendedLifetime(sections) {}
        return (change, rerun)
    }

    /// ns per bump with a count grouped by `count` live, and ns per re-run of its SQL.
    private func measureGroupedAggregate(
        store: ModelStore, objects: [BenchmarkRow], generator: inout SplitMix, reruns: Int, path: String
    ) async throws -> (change: Double, rerun: Double) {
        let perCount = try store.aggregate(.count, of: FetchDescriptor<BenchmarkRow>(), groupedBy: \.count)
        let change = try await measure(rounds: rounds, times: bumps, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
        }
        precondition(perCount.groups.reduce(0) { $0 + perCount[$1] } == rows, "the groups do not count every row")
        try await store.flush()
        let reader = try RawReader(path: path, sql: "SELECT count, count(*) FROM rows GROUP BY count")
        let rerun = try await measure(rounds: rounds, times: reruns, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
            reader.run()
        }
        return (change, rerun)
    }

    /// ns per bump with `count`, `sum` and `maximum` live, and ns per re-run of the SQL that
    /// computes all three.
    private func measureAggregates(
        store: ModelStore, objects: [BenchmarkRow], generator: inout SplitMix, reruns: Int, path: String
    ) async throws -> (change: Double, rerun: Double) {
        let busy = try store.aggregate(.count, of: FetchDescriptor<BenchmarkRow>(predicate: #Predicate { $0.count > 0 }))
        let total = try store.aggregate(.sum(\.count), of: FetchDescriptor<BenchmarkRow>())
        let top = try store.aggregate(.maximum(\.count), of: FetchDescriptor<BenchmarkRow>())
        let aggregateChange = try await measure(rounds: rounds, times: bumps, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
        }
        precondition(busy.value > 0 && total.value != nil && top.value != nil, "the aggregates hold nothing")
        try await store.flush()
        let reader = try RawReader(path: path, sql: "SELECT count(*) FILTER (WHERE count > 0), sum(count), max(count) FROM rows")
        let aggregateRerun = try await measure(rounds: rounds, times: reruns, store: store) {
            objects[Int(generator.next() % UInt64(rows))].count += 1
            reader.run()
        }
        withExtendedLifetime((busy, total, top)) {}
        return (aggregateChange, aggregateRerun)
    }

    /// The median over rounds of ns per call of `work`, flushing between rounds (outside the
    /// clock).
    private func measure(rounds: Int, times: Int, store: ModelStore, _ work: () throws -> Void) async throws -> Double {
        var samples: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<times { try work() }
            samples.append((ContinuousClock.now - start).timeInterval * 1e9 / Double(times))
            try await store.flush()
        }
        return Figures.median(samples)
    }
}

/// One prepared statement on a read-only connection of its own, stepped to its end each run:
/// a re-run as a re-fetching observation makes it.
private final class RawReader {
    private var connection: OpaquePointer?
    private var statement: OpaquePointer?

    init(path: String, sql: String) throws {
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
              sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot read \(path): \(String(cString: sqlite3_errmsg(connection)))"])
        }
    }

    func run() {
        while sqlite3_step(statement) == SQLITE_ROW {}
        sqlite3_reset(statement)
    }

    deinit {
        sqlite3_finalize(statement)
        sqlite3_close(connection)
    }
}
