import Foundation
import TrackedModels

/// A live list that holds a tenth of its table: `count > 0` sorted by `count` descending, then
/// `id`, where every tenth row starts with a positive count. Pseudo-random rows are bumped
/// (`count += 1`: a row outside the list enters it) and retitled (`title` is read by neither
/// the predicate nor the order).
///
/// Each round bumps a few rows, one at a time, with the clock around the assignments only; the
/// list is current when an assignment returns (its rows are re-placed during the delivery).
/// Outside the clock the round is undone, so every round starts from the same shape, and the
/// list is checked against a fresh fetch. The retitle is measured with the list open and, as
/// its baseline in the same run, with no list at all, alternating round by round.
///
/// ```swift
/// let report = try await SparseListBenchmark(rows: 100_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct SparseListBenchmark {
    public struct Report: Sendable {
        public var rows: Int
        /// Rows in the list at the start of each round.
        public var members: Int
        public var nsPerBump: Double
        public var nsPerRetitle: Double
        /// A retitle of the same rows with no live list open.
        public var nsPerRetitleWithoutList: Double

        public var table: String {
            "sparse live list (count > 0 by count desc, id; \(members) of \(rows) rows): \(Figures.format(nsPerBump)) ns/bump, "
                + "\(Figures.format(nsPerRetitle)) ns/retitle (\(Figures.format(nsPerRetitleWithoutList)) ns without the list, ratio "
                + "\(Figures.format(nsPerRetitle / nsPerRetitleWithoutList, digits: 2)))"
        }

        public var json: String {
            "{\"rows\": \(rows), \"members\": \(members), \"ns_per_bump\": \(Figures.format(nsPerBump)), "
                + "\"ns_per_retitle\": \(Figures.format(nsPerRetitle)), \"ns_per_retitle_without_list\": \(Figures.format(nsPerRetitleWithoutList))}"
        }
    }

    public var rows: Int
    /// Assignments measured per figure, spread over rounds.
    public var bumps = 20_000

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        let database = TemporaryDatabase(in: folder, named: "sparse")
        defer { database.remove() }
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.file(database.path), models: [BenchmarkRow.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(rows)).lazy.map { BenchmarkRow(id: $0, title: "Row \($0)", count: $0 % 10 == 0 ? $0 % 97 + 1 : 0) })
        try await store.flush()
        let objects = try store.fetch(BenchmarkRow.self, orderBy: "id")
        let descriptor = FetchDescriptor<BenchmarkRow>(
            predicate: #Predicate { $0.count > 0 },
            sortBy: [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.id)]
        )
        // A round touches few enough rows that the list keeps about its shape.
        let perRound = max(10, min(bumps, rows / 20))
        let rounds = min(200, max(5, bumps / perRound))
        var generator = SplitMix(seed: 7)
        let picks = (0..<rounds).map { _ in (0..<perRound).map { _ in objects[Int(generator.next() % UInt64(rows))] } }

        var list: FetchedResults<BenchmarkRow>? = try store.results(for: descriptor)
        let members = list?.count ?? 0
        var bump: [Double] = []
        for (round, rows) in picks.enumerated() {
            let start = ContinuousClock.now
            for row in rows { row.count += 1 }
            bump.append((ContinuousClock.now - start).timeInterval * 1e9 / Double(rows.count))
            if round == 0 || round == rounds - 1 { try check(list, against: descriptor, in: store) }
            for row in rows { row.count -= 1 }
            try await store.flush()
        }
        try check(list, against: descriptor, in: store)
        list = nil
        // The two retitle figures alternate, each round once with a list open and once with
        // none, so that neither meets the rows colder than the other.
        var retitle: [Double] = []
        var retitleWithoutList: [Double] = []
        for (round, rows) in picks.enumerated() {
            do {
                let open = try store.results(for: descriptor)
                retitle.append(try await retitleTime(rows, round: round, in: store))
                if round == rounds - 1 { try check(open, against: descriptor, in: store) }
                withExtendedLifetime(open) {}
            }
            retitleWithoutList.append(try await retitleTime(rows, round: round + rounds, in: store))
        }
        try await store.close()
        return Report(
            rows: rows, members: members, nsPerBump: Figures.median(bump),
            nsPerRetitle: Figures.median(retitle), nsPerRetitleWithoutList: Figures.median(retitleWithoutList)
        )
    }

    /// The ns of one retitle in a round.
    private func retitleTime(_ rows: [BenchmarkRow], round: Int, in store: ModelStore) async throws -> Double {
        let start = ContinuousClock.now
        for row in rows { row.title = "Row \(row.id) #\(round)" }
        let time = (ContinuousClock.now - start).timeInterval * 1e9 / Double(rows.count)
        try await store.flush()
        return time
    }

    /// Stops the run when the live list disagrees with a fresh fetch: a figure for a wrong list
    /// means nothing.
    private func check(_ list: FetchedResults<BenchmarkRow>?, against descriptor: FetchDescriptor<BenchmarkRow>, in store: ModelStore) throws {
        guard let list else { return }
        let fetched = try store.fetch(descriptor).map(\.id)
        precondition(list.keys == fetched, "the live list (\(list.count) rows) disagrees with a fresh fetch (\(fetched.count) rows)")
    }
}
