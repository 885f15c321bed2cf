import Testing
import TrackedModels
import TrackedModelsTesting

/// The 1,000-row workload: one `count` subscriber per row, one membership subscriber.
@MainActor
@Suite struct FeedContractTests {
    struct Workload {
        let store: ModelStore
        let rows: [Row]
        let probe: NotificationProbe
    }

    private func workload() async throws -> Workload {
        let store = try await Stores.rows(1_000)
        let rows = try store.fetch(Row.self, orderBy: "id")
        let probe = NotificationProbe(store: store)
        for row in rows { try probe.subscribe("row \(row.id)", to: .object(row, \Row.count)) }
        try probe.subscribe("list", to: .membership(Row.self))
        return Workload(store: store, rows: rows, probe: probe)
    }

    @Test func bumpingOneRowNotifiesExactlyItsSubscriber() async throws {
        let workload = try await workload()
        try workload.store.increment(\Row.count, of: workload.rows[42], by: 1)
        #expect(workload.probe.counts == ["row 42": 1])
        let event = try #require(workload.probe.events(of: "row 42").first)
        #expect(event.key == 42)
        #expect(event.kind == .update)
        #expect(event.origin == .local)
        #expect(event.change(of: \Row.count)! == (old: 0, new: 1))
    }

    @Test func aPlainAssignmentNotifiesTheSameWay() async throws {
        let workload = try await workload()
        workload.rows[42].count += 1
        #expect(workload.probe.counts == ["row 42": 1])
    }

    @Test func changingATitleNotifiesNoCountSubscriber() async throws {
        let workload = try await workload()
        workload.rows[7].title = "Renamed"
        #expect(workload.probe.total == 0)
    }

    @Test func insertingNotifiesOnlyTheMembershipSubscriber() async throws {
        let workload = try await workload()
        try workload.store.insert(Row(id: 1_000, title: "Row 1000", count: 0))
        #expect(workload.probe.counts == ["list": 1])
        #expect(workload.probe.events(of: "list")[0].kind == .insert)
    }

    @Test func deletingNotifiesMembershipAndTheRowsSubscribers() async throws {
        let workload = try await workload()
        try workload.store.delete(workload.rows[42])
        #expect(workload.probe.counts == ["list": 1, "row 42": 1])
        #expect(workload.probe.events(of: "row 42")[0].kind == .delete)
        #expect(workload.probe.events(of: "list")[0].kind == .delete)
    }

    @Test func theTrapShapeNotifiesEveryTableSubscriber() async throws {
        let store = try await Stores.rows(1_000)
        let rows = try store.fetch(Row.self, orderBy: "id")
        let probe = NotificationProbe(store: store)
        for row in rows { try probe.subscribe("row \(row.id)", to: .table(Row.self)) }
        try store.increment(\Row.count, of: rows[42])
        #expect(probe.total == 1_000)
        #expect(probe.counts.count == 1_000)
    }

    @Test func aHundredBumpsInATransactionAreOneEvent() async throws {
        let workload = try await workload()
        try workload.store.transaction {
            for _ in 0..<100 { try workload.store.increment(\Row.count, of: workload.rows[42]) }
        }
        #expect(workload.probe.counts == ["row 42": 1])
        #expect(workload.probe.events(of: "row 42")[0].change(of: \Row.count)! == (old: 0, new: 100))
    }

    @Test func anEqualValueWriteNotifiesNobody() async throws {
        let workload = try await workload()
        workload.rows[42].count = 0
        #expect(workload.probe.total == 0)
    }

    @Test func aCancelledOrReleasedSubscriberHearsNothing() async throws {
        let store = try await Stores.rows(2)
        let row = try #require(try store.find(Row.self, key: Int64(1)))
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
