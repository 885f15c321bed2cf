import Foundation
import Observation
import Testing
import TrackedModelsTesting
@testable import TrackedModels

/// The live list contracts: 1,000 rows with one subscriber per row, and a live list of
/// `count > 0` sorted by `count` descending. Rows 0...9 start with counts 100...91, the rest 0.
@MainActor
@Suite(.serialized) struct LiveResultsTests {
    @MainActor
    final class Workload {
        let directory: TemporaryDirectory
        let path: String
        let store: ModelStore
        let rows: [Row]
        let probe: NotificationProbe
        let list: FetchedResults<Row>
        var changes: [FetchedResults<Row>.Change] = []
        var differences: [FetchedResults<Row>.Difference] { changes.map(\.difference) }
        var observed = 0
        var subscription: FetchedResults<Row>.Subscription?

        init(limit: Int? = nil) async throws {
            directory = try TemporaryDirectory()
            path = directory.path("model.sqlite")
            store = try ModelStore(.file(path), models: [Row.self], configuration: Stores.configuration())
            try store.insert(contentsOf: (0..<1_000).map { Row(id: $0, title: "Row \($0)", count: $0 < 10 ? 100 - Int($0) : 0) })
            try await store.flush()
            rows = try store.fetch(Row.self, orderBy: "id")
            probe = NotificationProbe(store: store)
            for row in rows { try probe.subscribe("row \(row.id)", to: .object(row, \Row.count)) }
            var descriptor = FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)])
            descriptor.fetchLimit = limit
            list = try store.results(for: descriptor)
            subscription = list.onChange { [unowned self] in changes.append($0) }
            observe()
        }

        /// Observation of the list, re-armed after each notification, as a view would.
        func observe() {
            withObservationTracking { _ = list.count } onChange: { [weak self] in
                Task { @MainActor in
                    self?.observed += 1
                    self?.observe()
                }
            }
        }

        /// Lets Observation's re-arming tasks run.
        func settleObservation() async {
            for _ in 0..<5 { await Task.yield() }
        }
    }

    @Test func theListStartsInOrder() async throws {
        let workload = try await Workload()
        #expect(workload.list.keys == Array(0..<10))
        #expect(workload.list.count == 10)
        #expect(workload.list[0] === workload.rows[0])
        workload.list.checkInvariants()
    }

    @Test func aBumpedRowEntersAtItsPlace() async throws {
        let workload = try await Workload()
        workload.rows[500].count += 1
        await workload.settleObservation()
        #expect(workload.list.keys == Array(0..<10) + [500])
        #expect(workload.differences.count == 1)
        #expect(workload.differences.first?.insertions.map { if case .insert(let offset, _, _) = $0 { offset } else { -1 } } == [10])
        #expect(workload.observed == 1)
        #expect(workload.probe.counts == ["row 500": 1])
    }

    @Test func aBumpThatKeepsThePositionNotifiesNoListObserver() async throws {
        let workload = try await Workload()
        workload.rows[0].count += 1       // 101: still first
        workload.rows[5].count += 1       // 96: ties row 4, and sorts after it by key
        await workload.settleObservation()
        #expect(workload.list.keys == Array(0..<10))
        #expect(workload.differences.isEmpty)
        #expect(workload.observed == 0)
        #expect(workload.probe.counts == ["row 0": 1, "row 5": 1])
    }

    @Test func aBumpThatReordersIsOneNotificationWithAMove() async throws {
        let workload = try await Workload()
        try workload.store.increment(\Row.count, of: workload.rows[9], by: 10)   // 91 → 101
        await workload.settleObservation()
        #expect(workload.list.keys == [9] + Array(0..<9))
        #expect(workload.observed == 1)
        let difference = try #require(workload.differences.first)
        #expect(workload.differences.count == 1)
        #expect(difference.contains { if case .insert(0, 9, let moved) = $0 { moved == 9 } else { false } })
        // The same change by its offsets: row 9 left offset 9 and entered offset 0.
        let change = try #require(workload.changes.first)
        #expect(change.removedOffsets == [9] && change.insertedOffsets == [0])
        #expect(change.moves.map { [$0.from, $0.to] } == [[9, 0]])
        #expect(workload.probe.counts == ["row 9": 1])
    }

    @Test func aRetitleNotifiesNoListObserver() async throws {
        let workload = try await Workload()
        workload.rows[3].title = "Renamed"
        workload.rows[700].title = "Renamed"
        await workload.settleObservation()
        #expect(workload.differences.isEmpty)
        #expect(workload.observed == 0)
        #expect(workload.probe.total == 0)
    }

    @Test func anotherProcessesUpdateFollowsTheSameRules() async throws {
        let workload = try await Workload()
        try await sqlite3(workload.path, "UPDATE rows SET count = 1 WHERE id = 600")
        try await workload.store.refreshExternalChanges()
        try await sqlite3(workload.path, "UPDATE rows SET title = 'theirs' WHERE id = 2")
        try await workload.store.refreshExternalChanges()
        try await sqlite3(workload.path, "UPDATE rows SET count = 200 WHERE id = 7")
        try await workload.store.refreshExternalChanges()
        await workload.settleObservation()
        #expect(workload.list.keys == [7, 0, 1, 2, 3, 4, 5, 6, 8, 9, 600])
        #expect(workload.differences.count == 2)
        #expect(workload.observed == 2)
        #expect(workload.probe.counts == ["row 600": 1, "row 7": 1])
        #expect(workload.probe.events(of: "row 600").first?.origin == .external)
    }

    @Test func aTransactionIsOneListNotification() async throws {
        let workload = try await Workload()
        try workload.store.transaction {
            for index in 0..<100 { try workload.store.increment(\Row.count, of: workload.rows[800 + index % 5]) }
        }
        await workload.settleObservation()
        #expect(workload.observed == 1)
        #expect(workload.differences.count == 1)
        #expect(workload.list.keys == Array(0..<10) + [800, 801, 802, 803, 804])
        #expect(workload.list.map(\.count).suffix(5) == [20, 20, 20, 20, 20])
    }

    @Test func aRowLeavingAWindowPullsTheNextOneIn() async throws {
        let workload = try await Workload(limit: 5)
        #expect(workload.list.keys == [0, 1, 2, 3, 4])
        workload.rows[2].count = 0        // leaves: row 5 comes in
        await workload.settleObservation()
        #expect(workload.list.keys == [0, 1, 3, 4, 5])
        #expect(workload.observed == 1)
        workload.rows[8].count = 1        // enters below the window: nobody hears of it
        await workload.settleObservation()
        #expect(workload.observed == 1)
        #expect(workload.differences.count == 1)
        workload.rows[8].count = 1_000    // enters at the top
        await workload.settleObservation()
        #expect(workload.list.keys == [8, 0, 1, 3, 4])
        #expect(workload.observed == 2)
    }

    @Test func aMovedWindowShowsTheNextPageAndItsObserversHearTheMove() async throws {
        let workload = try await Workload(limit: 3)
        #expect((workload.list.fetchOffset, workload.list.fetchLimit) == (0, 3))
        try workload.list.moveWindow(offset: 3, limit: 3)
        await workload.settleObservation()
        // Heard at once, as the rows that left and the rows that entered.
        #expect(workload.list.keys == [3, 4, 5])
        #expect(workload.observed == 1)
        #expect(workload.differences.count == 1)
        #expect([0, 1, 2].applying(workload.differences[0]) == [3, 4, 5])
        #expect(workload.differences[0].removals.count == 3 && workload.differences[0].insertions.count == 3)
        // Overlapping: one row leaves, two enter.
        try workload.list.moveWindow(offset: 4, limit: 4)
        #expect(workload.list.keys == [4, 5, 6, 7])
        #expect(workload.differences.count == 2 && workload.differences[1].removals.count == 1 && workload.differences[1].insertions.count == 2)
        // A change past the window's end wakes nobody; one before its start shifts it.
        workload.rows[9].count = 0
        workload.rows[500].count = 1
        await workload.settleObservation()
        #expect(workload.observed == 2)
        #expect(workload.differences.count == 2)
        workload.rows[1].count = 0
        await workload.settleObservation()
        #expect(workload.list.keys == [5, 6, 7, 8])
        #expect(workload.observed == 3)
        #expect([4, 5, 6, 7].applying(workload.differences[2]) == [5, 6, 7, 8])
        // No limit: the rest of the list; then past its end: empty.
        try workload.list.moveWindow(offset: 6, limit: nil)
        #expect(workload.list.keys == [7, 8, 500])
        try workload.list.moveWindow(offset: 50, limit: 10)
        #expect(workload.list.isEmpty)
        workload.list.checkInvariants()
    }

    @Test func aRefusedWindowNamesTheValueAndMovesNothing() async throws {
        let workload = try await Workload(limit: 3)
        for (offset, limit, named) in [(-1, Optional(3), "fetchOffset is -1"), (0, -5, "fetchLimit is -5")] {
            let error = #expect(throws: StoreError.self) { try workload.list.moveWindow(offset: offset, limit: limit) }
            #expect(error?.code == .unsupportedPredicate)
            #expect(error?.message.contains(named) == true)
        }
        #expect(workload.list.keys == [0, 1, 2])
        #expect(workload.differences.isEmpty)
    }

    @Test func aWindowMovedByAnObserverMovesOnceEveryObserverHeardTheChange() async throws {
        let workload = try await Workload(limit: 3)
        var toldFirst: [Int64?] = workload.list.keys, toldSecond: [Int64?] = workload.list.keys
        let first = workload.list.onChange { [unowned workload] change in
            toldFirst = toldFirst.applying(change, shown: workload.list.keys) ?? []
            try? workload.list.moveWindow(offset: 3, limit: 3)
        }
        let second = workload.list.onChange { [unowned workload] change in
            toldSecond = toldSecond.applying(change, shown: workload.list.keys) ?? []
            // Each observer is told a change that gives what the list shows while it is told.
            #expect(toldSecond == workload.list.keys)
        }
        workload.rows[0].count = 0           // row 3 enters the first page
        #expect(workload.list.keys == [4, 5, 6])
        #expect(toldFirst == [4, 5, 6] && toldSecond == [4, 5, 6])
        withExtendedLifetime((first, second)) {}
    }

    @Test func movesInsideATransactionAreOneChangeAgainstWhatWasShown() async throws {
        let workload = try await Workload(limit: 2)
        try workload.store.transaction {
            try workload.list.moveWindow(offset: 2, limit: 2)
            workload.rows[0].count = 0               // shifts the window by one
            try workload.list.moveWindow(offset: 1, limit: 3)
        }
        await workload.settleObservation()
        #expect(workload.list.keys == [2, 3, 4])
        #expect(workload.differences.count == 1)
        #expect([0, 1].applying(workload.differences[0]) == [2, 3, 4])
        #expect(workload.observed == 1)
    }

    @Test func insertsDeletesAndResetsKeepItCurrent() async throws {
        let workload = try await Workload()
        try workload.store.insert(Row(id: 2_000, title: "new", count: 95))
        try workload.store.delete(workload.rows[1])
        await workload.settleObservation()
        #expect(workload.list.keys == [0, 2, 3, 4, 5, 2_000, 6, 7, 8, 9])
        try workload.store.deleteAll(Row.self)
        await workload.settleObservation()
        #expect(workload.list.isEmpty)
        workload.list.checkInvariants()
    }

    @Test func listResultsMatchAFetchAfterRandomChanges() async throws {
        let workload = try await Workload()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let row = workload.rows[Int.random(in: 0..<1_000, using: &generator)]
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: row.count = Int.random(in: 0..<5, using: &generator)
            case 1: try workload.store.increment(\Row.count, of: row, by: Int.random(in: -3...3, using: &generator))
            case 2: row.title = "t\(Int.random(in: 0..<9, using: &generator))"
            default: row.count += 1
            }
        }
        workload.list.checkInvariants()
        let fetched = try workload.store.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)]))
        #expect(workload.list.keys == fetched.map(\.id))
        try await workload.store.flush()
        let flushed = try workload.store.fetch(Row.self, where: "count > 0", orderBy: "count DESC, id")
        #expect(workload.list.keys == flushed.map(\.id))
    }

    @Test func differencesArriveAsAnAsyncSequence() async throws {
        let workload = try await Workload()
        let stream = workload.list.differences
        workload.rows[300].count = 1
        var iterator = stream.makeAsyncIterator()
        let change = await iterator.next()
        #expect(change?.insertedOffsets.count == 1)
        #expect(workload.list.keys.last == 300)
    }

    @Test func readingAnElementRegistersThatCellOnly() async throws {
        let workload = try await Workload()
        var heard: [ChangeEvent] = []
        // Row 9 is the last of the list (counts 100 ... 91): one less keeps it in its place.
        let (title, token) = workload.store.withTracking { workload.list[9].title } onChange: { heard.append($0) }
        #expect(title == "Row 9")
        workload.rows[3].title = "another row"
        workload.rows[9].count -= 1
        #expect(workload.list[9] === workload.rows[9])
        #expect(heard.isEmpty)
        workload.rows[9].title = "this one"
        #expect(heard.count == 1)
        token.cancel()
    }
}
