import Foundation
import Testing
import TrackedModelsTesting
@testable import TrackedModels

/// Relationships in feeds: `withTracking` depends on exactly the cells a chain reads, and on a
/// to-many's children coming and going; `.children(of:_:)` hears a parent's membership only.
@MainActor
@Suite struct RelationshipFeedTests {
    /// Lists 1 "Groceries" (entries 1, 2) and 2 "Chores" (entry 3), flushed.
    private func lists(in directory: TemporaryDirectory) async throws -> ModelStore {
        let store = try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        let groceries = TodoList(id: 1, title: "Groceries")
        let chores = TodoList(id: 2, title: "Chores")
        try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        try store.insert(Entry(id: 2, title: "Eggs", list: groceries))
        try store.insert(Entry(id: 3, title: "Sweep", list: chores))
        try await store.flush()
        return store
    }

    final class Heard {
        var events: [ChangeEvent] = []
    }

    @Test func withTrackingAChainDependsOnTheKeyAndTheTargetsCellOnly() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let milk = try #require(try store.find(Entry.self, key: 1))
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        let chores = try #require(try store.find(TodoList.self, key: 2))
        let heard = Heard()
        func arm() -> FeedToken {
            store.withTracking { milk.list?.title } onChange: { heard.events.append($0) }.token
        }

        var token = arm()
        chores.title = "Other list's title"
        milk.title = "Milk, not its list"
        #expect(heard.events.isEmpty, "neither the other list nor another column of the row")
        groceries.title = "Food"
        #expect(heard.events.count == 1)
        #expect(heard.events.first?.changed(\TodoList.title) == true)

        token = arm()
        milk.list = chores
        #expect(heard.events.count == 2, "re-parenting is heard through the key")
        token = arm()
        groceries.title = "The old list"
        #expect(heard.events.count == 2, "the old list is no longer read")
        chores.title = "Housework"
        #expect(heard.events.count == 3)
        token.cancel()
        try await store.close()
    }

    @Test func aChildrenFeedHearsMembershipFromHereAndFromAShellAndNothingElse() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        let chores = try #require(try store.find(TodoList.self, key: 2))
        let probe = NotificationProbe(store: store)
        try probe.subscribe("groceries", to: .children(of: groceries, \TodoList.entries))
        try probe.subscribe("chores", to: .children(of: chores, \TodoList.entries))

        let milk = try #require(try store.find(Entry.self, key: 1))
        milk.title = "Oat milk"
        chores.title = "Housework"
        #expect(probe.total == 0, "a child's other column, or the parent's own, is no membership change")

        milk.list = chores
        #expect(probe.counts == ["groceries": 1, "chores": 1])
        #expect(probe.events(of: "chores").first?.kind == .children("entries"))
        probe.reset()
        try store.insert(Entry(id: 4, title: "Bread", list: groceries))
        #expect(probe.counts == ["groceries": 1])
        probe.reset()
        try store.delete(try #require(try store.find(Entry.self, key: 3)))
        #expect(probe.counts == ["chores": 1])
        try await store.flush()

        // Another process re-points a child this store never loaded.
        probe.reset()
        try await sqlite3(directory.path("db.sqlite"), "UPDATE entries SET list_id = 2 WHERE id = 2")
        try await store.refreshExternalChanges()
        #expect(probe.counts == ["groceries": 1, "chores": 1])
        #expect(probe.received.allSatisfy { $0.event.origin == .external })
        #expect(chores.entries.map(\.id) == [1, 2])
        try await store.close()
    }

    @Test func aTransactionTellsAParentOnceAndARolledBackOneTellsNobody() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        let probe = NotificationProbe(store: store)
        try probe.subscribe("groceries", to: .children(of: groceries, \TodoList.entries))
        try store.transaction {
            try store.insert(Entry(id: 4, title: "Bread", list: groceries))
            try store.insert(Entry(id: 5, title: "Jam", list: groceries))
            #expect(probe.total == 0, "told when the transaction ends")
        }
        #expect(probe.counts == ["groceries": 1])
        probe.reset()
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.transaction {
                try store.insert(Entry(id: 6, title: "Butter", list: groceries))
                throw Refused()
            }
        }
        #expect(groceries.entries.map(\.id) == [1, 2, 4, 5])
        #expect(probe.total == 0, "a transaction that throws is heard by no feed")
        try await store.close()
    }

    /// Found in review: a feed's record of the children outlived the parent's object only
    /// until the object went away, and then a child re-pointed by another process was not heard.
    @Test func aChildrenFeedKeepsHearingAfterTheParentsObjectIsGone() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        let probe = NotificationProbe(store: store)
        do {
            let groceries = try #require(try store.find(TodoList.self, key: 1))
            try probe.subscribe("groceries", to: .children(of: groceries, \TodoList.entries))
        }
        // Entry 2 was never loaded as an object: only the feed's record finds its old list.
        try await sqlite3(directory.path("db.sqlite"), "UPDATE entries SET list_id = 2 WHERE id = 2")
        try await store.refreshExternalChanges()
        #expect(probe.counts == ["groceries": 1])
        try await sqlite3(directory.path("db.sqlite"), "UPDATE entries SET list_id = 2 WHERE id = 1")
        try await store.refreshExternalChanges()
        #expect(probe.counts == ["groceries": 2], "the record was made again after the first change")
        try await store.close()
    }

    /// Found in review: a feed's record, made inside a transaction that then failed, was served
    /// as the children of a list read afterwards.
    @Test func aRolledBackTransactionLeavesNoStaleChildrenForAListReadAfterwards() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let probe = NotificationProbe(store: store)
        let milk = try #require(try store.find(Entry.self, key: 1))
        do {
            let groceries = try #require(try store.find(TodoList.self, key: 1))
            try probe.subscribe("groceries", to: .children(of: groceries, \TodoList.entries))
        }
        let chores = try #require(try store.find(TodoList.self, key: 2))
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.transaction {
                milk.list = chores
                throw Refused()
            }
        }
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        #expect(groceries.entries.map(\.id) == [1, 2])
        #expect(groceries.entries.map(\.id) == (try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.id == 1 }, sortBy: [SortDescriptor(\.id)]))).map(\.id))
        try await store.close()
    }

    @Test func aFeedOfTheChildrenOfAListWithNoKeyYetIsRefused() async throws {
        let store = try ModelStore(.inMemory, models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        let list = TodoList(id: nil, title: "New")
        try store.insert(list)
        #expect {
            try store.subscribe(to: .children(of: list, \TodoList.entries)) { _ in }
        } throws: { error in
            (error as? StoreError)?.code == .notAttached && "\(error)".contains("has no key yet")
        }
        try await store.close()
    }
}
