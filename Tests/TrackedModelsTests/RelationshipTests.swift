import Foundation
import Observation
import Testing
import TrackedModelsTesting
@testable import TrackedModels

@Tracked(table: "lists")
final class TodoList {
    @PrimaryKey var id: Int64?
    var title: String
    @Relationship(deleteRule: .cascade, inverse: \Entry.list) var entries: [Entry] = []
}

/// A row of a list, with a to-one relationship to its list and one to another entry.
@Tracked(table: "entries")
final class Entry {
    @PrimaryKey var id: Int64?
    var title: String
    var list: TodoList?
    @Column("parent_entry") var parent: Entry?
    @Relationship(inverse: \Entry.parent) var children: [Entry] = []
}

@Tracked(table: "folders")
final class Folder {
    @PrimaryKey var id: Int64
    @Relationship(deleteRule: .deny, inverse: \Memo.folder) var memos: [Memo] = []
}

@Tracked(table: "memos")
final class Memo {
    @PrimaryKey var id: Int64
    var folder: Folder?
}

/// To-one relationships: a foreign-key column holding the target's key, loaded lazily and
/// identity-mapped, written behind like any column, and observed through the chain.
@MainActor
@Suite struct RelationshipTests {
    final class Counter: @unchecked Sendable {
        var fired = 0
    }

    /// A store on a new database with two lists (keys 1 and 2) and an entry (key 1) in list
    /// 1, and the database's path or URL.
    func listsAndAnEntry(_ engine: TestEngine, in directory: TemporaryDirectory) async throws -> (store: ModelStore, database: String) {
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let groceries = TodoList(id: 1, title: "Groceries")
        try store.insert(groceries)
        try store.insert(TodoList(id: 2, title: "Chores"))
        try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        try await store.flush()
        return (store, database)
    }

    /// An entry with its list loaded (on PostgreSQL a relationship is read from what the store
    /// holds).
    func entry(_ key: Int64, in store: ModelStore) async throws -> Entry {
        let entry = try #require(try await store.async.find(Entry.self, key: key))
        try await store.async.prefetch([\Entry.list, \Entry.parent], of: [entry])
        return entry
    }

    @Test(arguments: TestEngine.allCases)
    func aToOneIsItsTargetsKeyInAColumnNamedAfterIt(_ engine: TestEngine) async throws {
        let columns = Entry._$schema.columns
        #expect(columns.map(\.name) == ["id", "title", "list_id", "parent_entry"])
        #expect(columns[2].type == .integer && columns[2].isOptional)
        #expect(columns[2].reference?.modelName == "TodoList")
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = 1") == "1")
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func aLoadedTargetIsTheIdentityMappedObject(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (first, database) = try await listsAndAnEntry(engine, in: directory)
        try await first.close()
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let entry = try await entry(1, in: store)
        let list = try #require(entry.list)
        #expect(list === (try await store.async.find(TodoList.self, key: 1)))
        #expect(list.title == "Groceries")
        try store.insert(Entry(id: 2, title: "Eggs", list: list))
        let second = try #require(try await store.async.find(Entry.self, key: 2))
        #expect(second.list === entry.list)
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func assigningATargetWritesItsKeyBehind(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let chores = try #require(try await store.async.find(TodoList.self, key: 2))
        entry.list = chores
        #expect(store.hasPendingChanges)
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = 1") == "2")
        entry.list = nil
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT count(*) FROM entries WHERE id = 1 AND list_id IS NULL") == "1")
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func aChildOfANewParentWhoseKeyTheDatabaseAssignsGetsThatKey(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let list = TodoList(id: nil, title: "New")
        let entry = Entry(id: nil, title: "First", list: list)
        // Inserting the child inserts the parent it points at, first.
        try store.insert(entry)
        let other = Entry(id: nil, title: "Second")
        try store.insert(other)
        let later = TodoList(id: nil, title: "Later")
        other.list = later
        #expect(entry.list === list && other.list === later)
        try await store.flush()
        let listKey = try #require(list.id)
        let laterKey = try #require(later.id)
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = \(try #require(entry.id))") == "\(listKey)")
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = \(try #require(other.id))") == "\(laterKey)")
        #expect(try await engine.sql(database, "SELECT count(*) FROM lists") == "2")
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func readingTheTargetsTitleDependsOnTheKeyAndThatTitleOnly(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let groceries = try #require(try await store.async.find(TodoList.self, key: 1))
        let chores = try #require(try await store.async.find(TodoList.self, key: 2))
        func observe(_ counter: Counter) {
            withObservationTracking { _ = entry.list?.title } onChange: { counter.fired += 1 }
        }
        let other = Counter()
        observe(other)
        chores.title = "Other chores"
        entry.title = "Oat milk"
        #expect(other.fired == 0)
        let title = Counter()
        observe(title)
        groceries.title = "Food"
        #expect(title.fired == 1)
        let reparent = Counter()
        observe(reparent)
        entry.list = chores
        #expect(reparent.fired == 1)
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func feedsHearAReparentOnTheKeyColumn(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let probe = NotificationProbe(store: store)
        try probe.subscribe("list", to: .object(entry, \Entry.list))
        try probe.subscribe("title", to: .object(entry, \Entry.title))
        entry.list = try await store.async.find(TodoList.self, key: 2)
        #expect(probe.counts == ["list": 1])
        let event = try #require(probe.events(of: "list").first)
        #expect(event.changes.first?.old == .integer(1))
        #expect(event.changes.first?.new == .integer(2))
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func anotherConnectionsReparentReachesTheObjectAndItsObservers(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        #expect(entry.list?.title == "Groceries")
        let counter = Counter()
        withObservationTracking { _ = entry.list } onChange: { counter.fired += 1 }
        try await engine.sql(database, "UPDATE entries SET list_id = 2 WHERE id = 1")
        try await store.refreshExternalChanges()
        #expect(counter.fired == 1)
        try await store.async.prefetch([\Entry.list], of: [entry])
        #expect(entry.list?.title == "Chores")
        #expect(entry.list === (try await store.async.find(TodoList.self, key: 2)))
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func aThrowingTransactionTakesTheReparentBack(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let groceries = try #require(entry.list)
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try store.transaction {
                entry.list = TodoList(id: nil, title: "Inserted with it")
                throw Failure()
            }
        }
        #expect(entry.list === groceries)
        #expect(!store.hasPendingChanges)
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = 1") == "1")
        #expect(try await engine.sql(database, "SELECT count(*) FROM lists") == "2")
        try await store.close()
    }

    @Test(arguments: TestEngine.allCases)
    func anEntryPointsAtAnotherEntry(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let child = Entry(id: nil, title: "Whole milk", parent: entry)
        try store.insert(child)
        try await store.close()
        let reopened = try await engine.open(database, models: [TodoList.self, Entry.self])
        let children = try await reopened.async.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.parent?.id == 1 }))
        try await reopened.async.prefetch([\Entry.parent], of: children)
        #expect(children.map(\.title) == ["Whole milk"])
        #expect(children.first?.parent?.title == "Milk")
        try await reopened.async.prefetch([\Entry.parent], of: children.compactMap(\.parent))
        #expect(children.first?.parent?.parent == nil)
        try await reopened.close()
    }

    @Test(arguments: TestEngine.allCases)
    func aTargetAnotherProcessDeletedIsNoLongerReached(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await listsAndAnEntry(engine, in: directory)
        let entry = try await entry(1, in: store)
        let groceries = try #require(entry.list)
        try await engine.sql(database, "DELETE FROM lists WHERE id = 1")
        try await store.refreshExternalChanges()
        #expect(!groceries._$tracking.isAttached)
        #expect(entry.list == nil)
        try await store.close()
    }

    @Test func aTargetModelThatIsNotRegisteredIsRefusedAtOpen() async throws {
        #expect {
            _ = try ModelStore(.inMemory, models: [Entry.self], configuration: Stores.configuration())
        } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .modelNotRegistered && error.message.contains("Entry.list points at TodoList")
        }
    }
}

extension RelationshipTests {
    @Test(arguments: TestEngine.allCases)
    func clearingATargetNotYetLoadedStoresNull(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (first, database) = try await listsAndAnEntry(engine, in: directory)
        try await first.close()
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let entry = try #require(try await store.async.find(Entry.self, key: 1))
        entry.list = nil
        #expect(store.hasPendingChanges)
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT count(*) FROM entries WHERE id = 1 AND list_id IS NULL") == "1")
        try await store.close()
    }
}

/// What a review of the first version found.
extension RelationshipTests {
    private func freshStore(in directory: TemporaryDirectory) throws -> ModelStore {
        try ModelStore(.file(directory.path("model.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
    }

    private func stored(_ column: String, of entry: Entry, in directory: TemporaryDirectory) throws -> SQLValue {
        try Peek(directory.path("model.sqlite")).value("SELECT \(column) FROM entries WHERE id = ?", [.integer(try #require(entry.id))])
    }

    @Test func aNewEntryThatPointsAtItselfGetsItsOwnKey() async throws {
        let directory = try TemporaryDirectory()
        let store = try freshStore(in: directory)
        let entry = Entry(id: nil, title: "self")
        entry.parent = entry
        try store.insert(entry)
        try await store.flush()
        #expect(try stored("parent_entry", of: entry, in: directory) == .integer(try #require(entry.id)))
        #expect(entry.parent === entry)
        try await store.close()
    }

    @Test func newEntriesThatPointAtEachOtherGetEachOthersKeys() async throws {
        let directory = try TemporaryDirectory()
        let store = try freshStore(in: directory)
        let first = Entry(id: nil, title: "first")
        let second = Entry(id: nil, title: "second", parent: first)
        first.parent = second
        try store.insert(first)
        try await store.flush()
        #expect(try stored("parent_entry", of: first, in: directory) == .integer(try #require(second.id)))
        #expect(try stored("parent_entry", of: second, in: directory) == .integer(try #require(first.id)))
        try await store.close()
    }

    @Test func aThrowingTransactionPutsBackATargetThatWaitsForItsKey() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await listsAndAnEntry(.sqlite, in: directory)
        let entry = try #require(try store.find(Entry.self, key: 1))
        let waiting = TodoList(id: nil, title: "Waiting")
        entry.list = waiting
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try store.transaction {
                entry.list = nil
                entry.list = TodoList(id: nil, title: "Rolled back")
                throw Failure()
            }
        }
        #expect(entry.list === waiting)
        try await store.flush()
        #expect(try stored("list_id", of: entry, in: directory) == .integer(try #require(waiting.id)))
        #expect(try Peek(directory.path("model.sqlite")).value("SELECT count(*) FROM lists") == .integer(3))
        try await store.close()
    }

    @Test func insertingAnEntryWhoseNewListHasATakenKeyThrowsAndInsertsNothing() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await listsAndAnEntry(.sqlite, in: directory)
        let held = try #require(try store.find(TodoList.self, key: 1))
        let entry = Entry(id: 5, title: "Duplicate's child", list: TodoList(id: 1, title: "Another list 1"))
        #expect(throws: StoreError.self) { try store.insert(entry) }
        #expect(!store.hasPendingChanges)
        #expect(try store.find(Entry.self, key: 5) == nil)
        #expect(held.title == "Groceries")
        try await store.close()
    }

    // MARK: - Keys the database assigns, resolved inside the commit

    /// The Relationships article's example, with the entry object let go of before the flush:
    /// the list's key reaches the entry's row in the commit that inserts both.
    @Test(arguments: TestEngine.allCases)
    func aLinkToANewListIsWrittenByTheCommitThatInsertsItWhoeverHoldsTheEntry(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let groceries = TodoList(id: nil, title: "Groceries")
        do {
            try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        }
        try await store.flush()
        let key = try #require(groceries.id)
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = 1") == "\(key)")
        let entry = try #require(try await store.async.find(Entry.self, key: 1))
        try await store.async.prefetch([\Entry.list], of: [entry])
        #expect(entry.list === groceries)
        try await store.close()
    }

    /// A new entry of a new list, both let go of, then the store closed: both rows, linked.
    @Test(arguments: TestEngine.allCases)
    func aNewEntryOfANewListIsLinkedInTheFileAfterClose(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        try store.insert(Entry(id: nil, title: "Eggs", list: TodoList(id: nil, title: "Groceries")))
        try await store.close()
        #expect(try await engine.sql(database, "SELECT e.title || '/' || l.title FROM entries e JOIN lists l ON l.id = e.list_id") == "Eggs/Groceries")
    }

    /// A transaction that deleted every list and threw, while an entry points at a new list:
    /// nothing of the transaction stays, and the entry's link commits with the list.
    @Test(arguments: TestEngine.allCases)
    func aThrowingTransactionLeavesALinkToANewListAsItWas(_ engine: TestEngine) async throws {
        struct Abort: Error {}
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let list = TodoList(id: nil, title: "Groceries")
        try store.insert(Entry(id: 1, title: "Milk", list: list))
        #expect(throws: (any Error).self) {
            try store.transaction {
                try store.deleteAll(TodoList.self)
                throw Abort()
            }
        }
        try await store.flush()
        let key = try #require(list.id)
        #expect(try await engine.sql(database, "SELECT list_id FROM entries WHERE id = 1") == "\(key)")
        try await store.close()
    }

    /// Objects that point at each other, both new: each row holds the other's key, written in
    /// the one commit.
    @Test(arguments: TestEngine.allCases)
    func newEntriesThatPointAtEachOtherAreLinkedBothWays(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let first = Entry(id: nil, title: "first")
        let second = Entry(id: nil, title: "second", parent: first)
        first.parent = second
        try store.insert(first)
        let itself = Entry(id: nil, title: "itself")
        itself.parent = itself
        try store.insert(itself)
        try await store.flush()
        let (a, b, c) = try (#require(first.id), #require(second.id), #require(itself.id))
        #expect(try await engine.sql(database, "SELECT id || ':' || parent_entry FROM entries ORDER BY id") == "\(a):\(b)\n\(b):\(a)\n\(c):\(c)".split(separator: "\n").sorted().joined(separator: "\n"))
        #expect(first.parent === second && second.parent === first && itself.parent === itself)
        try await store.close()
    }
}

/// Misuse of a relationship is refused with a ``StoreError`` that names the property and what
/// to do, and changes nothing; it never traps. A setter cannot throw, so it publishes the error
/// on `writeErrors` and leaves the relationship as it was; `insert` throws.
@MainActor
@Suite struct RelationshipMisuseTests {
    func lists() async throws -> (store: ModelStore, directory: TemporaryDirectory, database: String) {
        let directory = try TemporaryDirectory()
        let database = try await TestEngine.sqlite.makeDatabase(in: directory)
        let store = try await TestEngine.sqlite.open(database, models: [TodoList.self, Entry.self])
        let groceries = TodoList(id: 1, title: "Groceries")
        try store.insert(groceries)
        try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        try await store.flush()
        return (store, directory, database)
    }

    @Test func pointingAtANewObjectWithTheKeyOfALoadedOneIsRefused() async throws {
        let (store, directory, database) = try await lists()
        defer { withExtendedLifetime(directory) {} }
        var errors = store.writeErrors.makeAsyncIterator()
        let entry = try #require(try store.find(Entry.self, key: 1))
        let loaded = try #require(entry.list)
        entry.list = TodoList(id: 1, title: "Impostor")
        #expect(entry.list === loaded)
        let error = try #require(await errors.next())
        #expect(error.code == .duplicateKey)
        #expect(error.message.contains("Entry.list"))
        #expect(store.pendingChanges.isEmpty)
        try await store.flush()
        #expect(try await TestEngine.sqlite.sql(database, "SELECT count(*) || '/' || min(title) FROM lists") == "1/Groceries")
        try await store.close()
    }

    @Test func pointingAtAnotherStoresObjectIsRefused() async throws {
        let (store, directory, _) = try await lists()
        let other = try await TestEngine.sqlite.open(try await TestEngine.sqlite.makeDatabase(in: directory), models: [TodoList.self, Entry.self])
        let foreign = TodoList(id: 7, title: "Elsewhere")
        try other.insert(foreign)
        var errors = store.writeErrors.makeAsyncIterator()
        let entry = try #require(try store.find(Entry.self, key: 1))
        let loaded = try #require(entry.list)
        entry.list = foreign
        #expect(entry.list === loaded)
        let error = try #require(await errors.next())
        #expect(error.code == .notAttached)
        #expect(error.message.contains("another store"))
        #expect(store.pendingChanges.isEmpty)
        // Inserting an object that points at it throws, and inserts nothing.
        #expect(throws: StoreError.self) { try store.insert(Entry(id: 2, title: "Eggs", list: foreign)) }
        #expect(try store.find(Entry.self, key: 2) == nil)
        #expect(store.pendingChanges.isEmpty)
        try await other.close()
        try await store.close()
    }

    @Test func addingAChildWithTheKeyOfALoadedOneIsRefused() async throws {
        let (store, directory, _) = try await lists()
        defer { withExtendedLifetime(directory) {} }
        var errors = store.writeErrors.makeAsyncIterator()
        let list = try #require(try store.find(TodoList.self, key: 1))
        _ = try #require(try store.find(Entry.self, key: 1))
        let duplicate = Entry(id: 1, title: "Duplicate")
        list.entries.append(duplicate)
        let error = try #require(await errors.next())
        #expect(error.code == .duplicateKey)
        #expect(duplicate.list == nil)
        #expect(list.entries.map(\.title) == ["Milk"])
        #expect(store.pendingChanges.isEmpty)
        try await store.close()
    }
}

extension RelationshipTests {
    /// Found by the two-table reference test: discarding a pending change of a to-one left the
    /// object pointing at the target until the worker's re-read arrived; the discard reads the
    /// committed row through the store's reads, so on SQLite the object shows it when the
    /// discard returns.
    @Test func discardingARelationsChangeShowsTheCommittedTargetAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await listsAndAnEntry(.sqlite, in: directory)
        let milk = try #require(try store.find(Entry.self, key: 1))
        let groceries = try #require(milk.list)
        let other = try #require(try store.find(TodoList.self, key: 2))
        milk.list = other
        store.discardPendingChanges()
        #expect(milk.list === groceries)
        #expect(groceries.entries.map(\.id) == [1])
        try await store.close()
    }
}
