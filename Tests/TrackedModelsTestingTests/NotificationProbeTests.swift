import Testing
import TrackedModels
import TrackedModelsTesting

@Tracked(table: "items")
final class Item {
    @PrimaryKey var id: Int64
    var name: String
    var score: Int
}

@MainActor
@Suite struct NotificationProbeTests {
    private func store() async throws -> ModelStore {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.inMemory, models: [Item.self], configuration: configuration)
        try store.insert(contentsOf: (0..<3).map { Item(id: $0, name: "Item \($0)", score: 0) })
        try await store.flush()
        return store
    }

    @Test func countsEventsPerSubscriberName() async throws {
        let store = try await store()
        let items = try store.fetch(Item.self, orderBy: "id")
        let probe = NotificationProbe(store: store)
        for item in items { try probe.subscribe("item \(item.id)", to: .object(item, \Item.score)) }
        items[1].score = 5
        items[1].score = 6
        items[2].name = "renamed"
        #expect(probe.counts == ["item 1": 2])
        #expect(probe.total == 2)
        #expect(probe.events(of: "item 1").map { $0.change(of: \Item.score)!.new } == [5, 6])
    }

    @Test func resetForgetsAndCancelStopsCounting() async throws {
        let store = try await store()
        let item = try #require(try store.find(Item.self, key: Int64(0)))
        let probe = NotificationProbe(store: store)
        try probe.subscribe("item", to: .object(item))
        item.score = 1
        probe.reset()
        #expect(probe.counts.isEmpty)
        probe.cancel()
        item.score = 2
        #expect(probe.total == 0)
    }
}
