import Foundation
import Testing
@testable import TrackedModels

/// Rows inserted whose key the database has yet to assign are part of what the store shows
/// before they commit: fetched, counted, listed live (as `nil` keys, after every key), and
/// reached through a to-one whose target waits for its key too. Issue 27's examples 2 and 6.
@MainActor
@Suite struct PendingIdentityTests {
    func store(_ engine: TestEngine, in directory: TemporaryDirectory) async throws -> ModelStore {
        let database = try await engine.makeDatabase(in: directory)
        return try await engine.open(database, models: [TodoList.self, Entry.self])
    }

    /// A new entry of a new list: both wait for their keys, and a fetch, a count and a live
    /// list through `list?.title` find the entry before the flush, as `entry.list?.title` shows.
    @Test(arguments: TestEngine.allCases)
    func aNewRowOfANewTargetIsFoundThroughTheJoinBeforeTheFlush(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(engine, in: directory)
        let groceries = FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.id)])
        let live = try await store.async.results(for: groceries)
        var keysTold: [Int64?] = []
        let subscription = live.onChange { keysTold = keysTold.applying($0, shown: live.keys) ?? [-1] }

        let list = TodoList(id: nil, title: "Groceries")
        let milk = Entry(id: nil, title: "Milk", list: list)
        try store.insert(milk)
        #expect(milk.list?.title == "Groceries")
        #expect(try await store.async.fetch(groceries).map(ObjectIdentifier.init) == [ObjectIdentifier(milk)])
        #expect(try await store.async.fetchCount(groceries) == 1)
        #expect(try await store.async.fetchCount(FetchDescriptor<Entry>()) == 1)
        #expect(live.keys == [nil])
        #expect(live.first === milk)
        #expect(keysTold == [nil])

        // The target's change reaches the row that points at it.
        list.title = "Chores"
        #expect(live.keys == [])
        #expect(try await store.async.fetchCount(groceries) == 0)
        list.title = "Groceries"
        #expect(live.keys == [nil])

        try await store.flush()
        let key = try #require(milk.id)
        #expect(live.keys == [key])
        #expect(live.first === milk)
        #expect(keysTold == [key])
        #expect(try await store.async.fetch(groceries).map(\.id) == [key])
        subscription.cancel()
        try await store.close()
    }

    /// Example 6: a count right after an insert whose key the database assigns counts it; a
    /// fetch sorts it after every key, in the order of the inserts, and a predicate on the key
    /// sees it as its object shows it: nil.
    @Test(arguments: TestEngine.allCases)
    func aRowWaitingForItsKeyIsCountedAndSortsAfterEveryKey(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(engine, in: directory)
        try store.insert(TodoList(id: 5, title: "Keyed"))
        try await store.flush()
        let first = TodoList(id: nil, title: "First")
        let second = TodoList(id: nil, title: "Second")
        try store.insert(first)
        try store.insert(second)
        #expect(try await store.async.fetchCount(FetchDescriptor<TodoList>()) == 3)
        let byKey = try await store.async.fetch(FetchDescriptor<TodoList>(sortBy: [SortDescriptor(\.id)]))
        #expect(byKey.map(\.title) == ["Keyed", "First", "Second"])
        #expect(byKey[1] === first && byKey[2] === second)
        #expect(try await store.async.fetchCount(FetchDescriptor<TodoList>(predicate: #Predicate { $0.id == nil })) == 2)
        let live = try await store.async.results(for: FetchDescriptor<TodoList>(sortBy: [SortDescriptor(\.title)]))
        #expect(live.keys == [nil, 5, nil])
        #expect(live.map(\.title) == ["First", "Keyed", "Second"])
        try await store.flush()
        #expect(live.keys == [first.id, 5, second.id])
        try await store.close()
    }

    /// A new row discarded, or undone with a transaction, leaves live lists; one made inside a
    /// thrown transaction is never heard of.
    @Test func aNewRowTakenBackLeavesTheLists() async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(.sqlite, in: directory)
        let live = try store.results(for: FetchDescriptor<TodoList>())
        var keysTold: [Int64?] = []
        let subscription = live.onChange { keysTold = keysTold.applying($0, shown: live.keys) ?? [-1] }
        struct Undo: Error {}
        #expect(throws: Undo.self) {
            try store.transaction {
                try store.insert(TodoList(id: nil, title: "Gone"))
                throw Undo()
            }
        }
        #expect(live.keys == [])
        try store.insert(TodoList(id: nil, title: "Discarded"))
        #expect(live.keys == [nil])
        store.discardPendingChanges()
        #expect(live.keys == [])
        #expect(keysTold == [])
        subscription.cancel()
        try await store.close()
    }
}

extension PendingIdentityTests {
    /// Found by the two-table reference test on PostgreSQL: deleting a list whose entry waits
    /// for its key asked the server for that entry's committed row by its key's placeholder
    /// (`invalid input syntax for type bigint`), where the delete must refuse, saying why.
    @Test(arguments: TestEngine.allCases)
    func deletingATargetWhoseChildWaitsForItsKeyRefusesWithoutReadingIt(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(engine, in: directory)
        let list = TodoList(id: 1, title: "Groceries")
        try store.insert(list)
        try await store.flush()
        try store.insert(Entry(id: nil, title: "Milk", list: list))
        await #expect { try await store.async.delete(list) } throws: { error in
            (error as? StoreError)?.code == .notAttached
        }
        #expect(try await store.async.fetchCount(FetchDescriptor<TodoList>()) == 1)
        try await store.close()
    }
}

extension PendingIdentityTests {
    /// Found by review: a row pointed at a new list, then the change discarded, shows NULL
    /// before and after, but no longer reaches the list: a live list through the relationship
    /// lets it go, as a fresh fetch does; so does discarding only the row's change.
    @Test(arguments: [true, false])
    func discardingALinkToANewTargetTakesTheRowOutOfAListThroughTheJoin(_ discardsEverything: Bool) async throws {
        let directory = try TemporaryDirectory()
        let store = try await store(.sqlite, in: directory)
        try store.insert(Entry(id: 1, title: "Milk", list: nil))
        try await store.flush()
        let groceries = FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "G" })
        let live = try store.results(for: groceries)
        let milk = try #require(try store.find(Entry.self, key: 1))
        milk.list = TodoList(id: nil, title: "G")
        #expect(live.count == 1)
        if discardsEverything {
            store.discardPendingChanges()
        } else {
            try store.discard(try #require(store.pendingChanges.first { $0.description.contains("update") }))
        }
        #expect(try store.fetch(groceries).isEmpty)
        #expect(live.count == 0)
        #expect(milk.list == nil)
        try await store.close()
    }
}
