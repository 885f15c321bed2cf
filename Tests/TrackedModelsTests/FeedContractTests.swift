import Foundation
import Testing
import TrackedModels
import TrackedModelsTesting

/// The 1,000-row workload: one `count` subscriber per row, one membership subscriber; on both
/// engines.
@MainActor
@Suite struct FeedContractTests {
    struct Workload {
        let directory: TemporaryDirectory
        let store: ModelStore
        let rows: [Row]
        let probe: NotificationProbe
    }

    /// A store on a new database of the engine, holding `count` rows, fetched in key order.
    private func rows(_ count: Int, on engine: TestEngine) async throws -> (TemporaryDirectory, ModelStore, [Row]) {
        let directory = try TemporaryDirectory()
        let store = try await engine.open(try await engine.makeDatabase(in: directory))
        try store.insert(contentsOf: (0..<Int64(count)).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        return (directory, store, try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)])))
    }

    private func workload(on engine: TestEngine) async throws -> Workload {
        let (directory, store, rows) = try await rows(1_000, on: engine)
        let probe = NotificationProbe(store: store)
        for row in rows { try probe.subscribe("row \(row.id)", to: .object(row, \Row.count)) }
        try probe.subscribe("list", to: .membership(Row.self))
        return Workload(directory: directory, store: store, rows: rows, probe: probe)
    }

    @Test(arguments: TestEngine.allCases)
    func bumpingOneRowNotifiesExactlyItsSubscriber(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        try workload.store.increment(\Row.count, of: workload.rows[42], by: 1)
        #expect(workload.probe.counts == ["row 42": 1])
        let event = try #require(workload.probe.events(of: "row 42").first)
        #expect(event.key == 42)
        #expect(event.kind == .update)
        #expect(event.origin == .local)
        #expect(event.change(of: \Row.count)! == (old: 0, new: 1))
    }

    @Test(arguments: TestEngine.allCases)
    func aPlainAssignmentNotifiesTheSameWay(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        workload.rows[42].count += 1
        #expect(workload.probe.counts == ["row 42": 1])
    }

    @Test(arguments: TestEngine.allCases)
    func changingATitleNotifiesNoCountSubscriber(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        workload.rows[7].title = "Renamed"
        #expect(workload.probe.total == 0)
    }

    @Test(arguments: TestEngine.allCases)
    func insertingNotifiesOnlyTheMembershipSubscriber(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        try workload.store.insert(Row(id: 1_000, title: "Row 1000", count: 0))
        #expect(workload.probe.counts == ["list": 1])
        #expect(workload.probe.events(of: "list")[0].kind == .insert)
    }

    @Test(arguments: TestEngine.allCases)
    func deletingNotifiesMembershipAndTheRowsSubscribers(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        try workload.store.delete(workload.rows[42])
        #expect(workload.probe.counts == ["list": 1, "row 42": 1])
        #expect(workload.probe.events(of: "row 42")[0].kind == .delete)
        #expect(workload.probe.events(of: "list")[0].kind == .delete)
    }

    @Test(arguments: TestEngine.allCases)
    func theTrapShapeNotifiesEveryTableSubscriber(_ engine: TestEngine) async throws {
        let (directory, store, rows) = try await rows(1_000, on: engine)
        defer { withExtendedLifetime(directory) {} }
        let probe = NotificationProbe(store: store)
        for row in rows { try probe.subscribe("row \(row.id)", to: .table(Row.self)) }
        try store.increment(\Row.count, of: rows[42])
        #expect(probe.total == 1_000)
        #expect(probe.counts.count == 1_000)
    }

    @Test(arguments: TestEngine.allCases)
    func aHundredBumpsInATransactionAreOneEvent(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        try workload.store.transaction {
            for _ in 0..<100 { try workload.store.increment(\Row.count, of: workload.rows[42]) }
        }
        #expect(workload.probe.counts == ["row 42": 1])
        #expect(workload.probe.events(of: "row 42")[0].change(of: \Row.count)! == (old: 0, new: 100))
    }

    @Test(arguments: TestEngine.allCases)
    func anEqualValueWriteNotifiesNobody(_ engine: TestEngine) async throws {
        let workload = try await workload(on: engine)
        workload.rows[42].count = 0
        #expect(workload.probe.total == 0)
    }

    @Test(arguments: TestEngine.allCases)
    func aCancelledOrReleasedSubscriberHearsNothing(_ engine: TestEngine) async throws {
        let (directory, store, rows) = try await rows(2, on: engine)
        defer { withExtendedLifetime(directory) {} }
        let row = rows[1]
        var heard = 0
        let cancelled = try store.subscribe(to: .object(row, \Row.count)) { _ in heard += 1 }
        cancelled.cancel()
        var released: FeedToken? = try store.subscribe(to: .object(row, \Row.count)) { _ in heard += 1 }
        #expect(released?.isActive == true)
        released = nil
        row.count = 9
        #expect(heard == 0)
        #expect(!cancelled.isActive)
    }
}
