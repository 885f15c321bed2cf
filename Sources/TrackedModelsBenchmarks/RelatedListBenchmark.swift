import Foundation
import TrackedModels

/// A list of the demo's lists, tracked.
@Tracked(table: "lists")
final class BenchmarkList {
    @PrimaryKey var id: Int64
    var title: String
}

/// A row that belongs to a list.
@Tracked(table: "listed_rows")
final class BenchmarkListedRow {
    @PrimaryKey var id: Int64
    var title: String
    var list: BenchmarkList?
}

/// A live list filtered through a to-one relationship: the rows whose list is titled
/// "Starred" (`#Predicate { $0.list?.title == "Starred" }`), over lists of ten rows each, one
/// list in ten starred at the start. A round stars or unstars pseudo-random lists, one at a
/// time, with the clock around the assignment only: the live list is current when it returns
/// (the ten rows of that list are re-evaluated during the delivery, and no others). Outside
/// the clock the round is undone and flushed, and the list is checked against a fresh fetch.
/// A round retitles 50 lists, whatever the table's size.
///
/// Its baselines, measured in the same run: the same retitles with no live list open, and
/// re-running the query (`fetch`), which is what a list that re-fetches on each change pays.
///
/// A second figure is an import: one transaction that inserts 100 lists (half of them starred)
/// and ten rows in each, with the clock around the transaction (the live list is current when
/// it returns), against the same import with no live list open. Each new list is a target
/// that changed while a thousand rows wait to be committed: the rows pointing at the targets
/// of one delivery are read together, once.
///
/// ```swift
/// let report = try await RelatedListBenchmark(rows: 100_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct RelatedListBenchmark {
    public struct Report: Sendable {
        public var rows: Int
        /// Rows in the list at the start of each round.
        public var members: Int
        public var nsPerRetitle: Double
        public var nsPerRetitleWithoutList: Double
        /// One fetch of the same descriptor.
        public var nsPerFetch: Double
        /// Per row of an import of lists and their rows in one transaction.
        public var nsPerImportedRow: Double
        public var nsPerImportedRowWithoutList: Double

        public var table: String {
            "live list across a to-one (list?.title == \"Starred\"; \(members) of \(rows) rows, 10 per list): "
                + "\(Figures.format(nsPerRetitle)) ns/list retitled (\(Figures.format(nsPerRetitleWithoutList)) ns without the list; "
                + "re-running the query: \(Figures.format(nsPerFetch)) ns, \(Figures.format(nsPerFetch / nsPerRetitle, digits: 1))x the live list); "
                + "an import of \(Self.importedLists) lists and \(Self.importedLists * 10) rows in one transaction: \(Figures.format(nsPerImportedRow)) ns/row "
                + "(\(Figures.format(nsPerImportedRowWithoutList)) ns without the list, \(Figures.format(nsPerImportedRow / nsPerImportedRowWithoutList, digits: 2))x)"
        }

        /// Lists an import inserts, with ten rows each.
        static let importedLists = 100

        public var json: String {
            "{\"rows\": \(rows), \"members\": \(members), \"ns_per_retitle\": \(Figures.format(nsPerRetitle)), "
                + "\"ns_per_retitle_without_list\": \(Figures.format(nsPerRetitleWithoutList)), \"ns_per_fetch\": \(Figures.format(nsPerFetch)), "
                + "\"ns_per_imported_row\": \(Figures.format(nsPerImportedRow)), \"ns_per_imported_row_without_list\": \(Figures.format(nsPerImportedRowWithoutList))}"
        }
    }

    public var rows: Int
    /// Lists retitled per figure, spread over rounds.
    public var retitles = 2_000

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        let database = TemporaryDatabase(in: folder, named: "related")
        defer { database.remove() }
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.file(database.path), models: [BenchmarkList.self, BenchmarkListedRow.self], configuration: configuration)
        let listCount = max(1, rows / 10)
        let lists = (0..<Int64(listCount)).map { BenchmarkList(id: $0, title: $0 % 10 == 0 ? "Starred" : "List \($0)") }
        try store.insert(contentsOf: lists)
        try store.insert(contentsOf: (0..<Int64(rows)).lazy.map { BenchmarkListedRow(id: $0, title: "Row \($0)", list: lists[Int($0) % listCount]) })
        try await store.flush()
        let descriptor = FetchDescriptor<BenchmarkListedRow>(predicate: #Predicate { $0.list?.title == "Starred" }, sortBy: [SortDescriptor(\.id)])

        // The same number of lists per round whatever the table's size: the changes waiting for
        // a flush, which a target's change also looks through, stay as many.
        let perRound = max(1, min(retitles, 50, listCount / 2))
        let rounds = min(200, max(5, retitles / perRound))
        var generator = SplitMix(seed: 11)
        let picks = (0..<rounds).map { _ in (0..<perRound).map { _ in lists[Int(generator.next() % UInt64(listCount))] } }

        var retitle: [Double] = []
        var retitleWithoutList: [Double] = []
        var fetch: [Double] = []
        var members = 0
        for (round, chosen) in picks.enumerated() {
            do {
                let live = try store.results(for: descriptor)
                members = live.count
                retitle.append(try await retitleTime(chosen, in: store))
                if round == 0 || round == rounds - 1 {
                    try toggle(chosen)
                    try check(live, against: descriptor, in: store)
                    try toggle(chosen)
                }
                withExtendedLifetime(live) {}
            }
            retitleWithoutList.append(try await retitleTime(chosen, in: store))
            // The baseline: one fetch of the same descriptor per retitle.
            let start = ContinuousClock.now
            let fetched = try store.fetch(descriptor)
            fetch.append((ContinuousClock.now - start).timeInterval * 1e9)
            precondition(fetched.count == members, "the fetch found \(fetched.count) rows; the live list held \(members)")
        }

        var imported: [Double] = []
        var importedWithoutList: [Double] = []
        for round in 0..<8 {
            do {
                let live = try store.results(for: descriptor)
                imported.append(try await importTime(round: 2 * round, lists: listCount, in: store) {
                    try check(live, against: descriptor, in: store)
                })
                withExtendedLifetime(live) {}
            }
            importedWithoutList.append(try await importTime(round: 2 * round + 1, lists: listCount, in: store) {})
        }
        try await store.close()
        return Report(
            rows: rows, members: members, nsPerRetitle: Figures.median(retitle),
            nsPerRetitleWithoutList: Figures.median(retitleWithoutList), nsPerFetch: Figures.median(fetch),
            nsPerImportedRow: Figures.median(imported), nsPerImportedRowWithoutList: Figures.median(importedWithoutList)
        )
    }

    /// The ns per row of one import (new keys each round); outside the clock, `check` runs,
    /// and the import is deleted and flushed.
    private func importTime(round: Int, lists: Int, in store: ModelStore, check: () throws -> Void) async throws -> Double {
        let count = Report.importedLists
        let newLists = (0..<count).map { index in
            BenchmarkList(id: Int64(lists + round * count + index), title: index % 2 == 0 ? "Starred" : "Imported \(index)")
        }
        let newRows = (0..<count * 10).map { index in
            BenchmarkListedRow(id: Int64(rows + (round * count + index / 10) * 10 + index % 10), title: "Imported row", list: newLists[index / 10])
        }
        let start = ContinuousClock.now
        try store.transaction {
            try store.insert(contentsOf: newLists)
            try store.insert(contentsOf: newRows)
        }
        let time = (ContinuousClock.now - start).timeInterval * 1e9 / Double(newRows.count)
        try check()
        try store.transaction {
            for row in newRows { try store.delete(row) }
            for list in newLists { try store.delete(list) }
        }
        try await store.flush()
        return time
    }

    /// The ns of one list's retitle in a round; the round is then undone and flushed.
    private func retitleTime(_ lists: [BenchmarkList], in store: ModelStore) async throws -> Double {
        let start = ContinuousClock.now
        for list in lists { list.title = list.title == "Starred" ? "List \(list.id)" : "Starred" }
        let time = (ContinuousClock.now - start).timeInterval * 1e9 / Double(lists.count)
        try toggle(lists)
        try await store.flush()
        return time
    }

    /// Stars an unstarred list and the other way round (a list picked twice toggles twice).
    private func toggle(_ lists: [BenchmarkList]) throws {
        for list in lists.reversed() { list.title = list.title == "Starred" ? "List \(list.id)" : "Starred" }
    }

    /// Stops the run when the live list disagrees with a fresh fetch: a figure for a wrong list
    /// means nothing.
    private func check(_ list: FetchedResults<BenchmarkListedRow>, against descriptor: FetchDescriptor<BenchmarkListedRow>, in store: ModelStore) throws {
        let fetched = try store.fetch(descriptor).map(\.id)
        precondition(list.keys == fetched, "the live list (\(list.count) rows) disagrees with a fresh fetch (\(fetched.count) rows)")
    }
}
