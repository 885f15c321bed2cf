import Foundation
import Testing
@testable import TrackedModels

/// Queries and live lists that read through a to-one relationship (`$0.list?.title`): a join
/// in SQL, the target's current values in memory, and a live list that follows a target's
/// change by re-evaluating only the rows that point at it.
@MainActor
@Suite struct RelatedQueryTests {
    /// Lists 1 "Groceries" and 2 "Chores"; entries 1 Milk and 2 Eggs in list 1, 3 Sweep in
    /// list 2, 4 Loose in none.
    private func lists(in directory: TemporaryDirectory) async throws -> ModelStore {
        let store = try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        let groceries = TodoList(id: 1, title: "Groceries")
        let chores = TodoList(id: 2, title: "Chores")
        try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        try store.insert(Entry(id: 2, title: "Eggs", list: groceries))
        try store.insert(Entry(id: 3, title: "Sweep", list: chores))
        try store.insert(Entry(id: 4, title: "Loose"))
        try await store.flush()
        return store
    }

    private func reopen(_ directory: TemporaryDirectory) throws -> ModelStore {
        try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
    }

    @Test func aPredicateReadsTheTargetsColumnAndNilWhereThereIsNone() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let groceries = try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.id)]))
        #expect(groceries.map(\.id) == [1, 2])
        // `nil != "Groceries"` is true, as in Swift.
        let others = try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title != "Groceries" }, sortBy: [SortDescriptor(\.id)]))
        #expect(others.map(\.id) == [3, 4])
        let none = try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == nil }))
        #expect(none.map(\.id) == [4])
        let containing = try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title.contains("ore") == true }))
        #expect(containing.map(\.id) == [3])
        #expect(try store.fetchCount(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" })) == 2)
        // The objects are the store's own, with their relationship intact.
        #expect(groceries[0].list === (try store.find(TodoList.self, key: 1)))
        try await store.close()
    }

    @Test func aKeyWithNoRowReadsAsNilAsTheRelationshipDoes() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        try Peek(directory.path("db.sqlite")).execute("PRAGMA foreign_keys = OFF; UPDATE entries SET list_id = 99 WHERE id = 3")
        let store = try reopen(directory)
        let entry = try #require(try store.find(Entry.self, key: 3))
        #expect(entry.list == nil)
        let none = try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == nil }, sortBy: [SortDescriptor(\.id)]))
        #expect(none.map(\.id) == [3, 4])
        let live = try store.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == nil }, sortBy: [SortDescriptor(\.id)]))
        #expect(live.keys == [3, 4])
        // A list of that key arriving gives the entry a title.
        try store.insert(TodoList(id: 99, title: "Found"))
        #expect(live.keys == [4])
        try await store.close()
    }

    @Test func sortingByTheTargetsColumnPutsNilFirstThenByTitle() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let sorted = try store.fetch(FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.list?.title), SortDescriptor(\.title)]))
        #expect(sorted.map(\.title) == ["Loose", "Sweep", "Eggs", "Milk"])
        let reversed = try store.fetch(FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.list?.title, order: .reverse), SortDescriptor(\.id)]))
        #expect(reversed.map(\.id) == [1, 2, 3, 4])
        try await store.close()
    }

    @Test func changesNotYetFlushedCountOnBothSidesOfTheJoin() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let descriptor = FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.id)])
        let chores = try #require(try store.find(TodoList.self, key: 2))
        chores.title = "Groceries"
        #expect(try store.fetch(descriptor).map(\.id) == [1, 2, 3])
        #expect(try store.fetchCount(descriptor) == 3)
        let loose = try #require(try store.find(Entry.self, key: 4))
        loose.list = chores
        #expect(try store.fetch(descriptor).map(\.id) == [1, 2, 3, 4])
        try store.delete(try #require(try store.find(TodoList.self, key: 1)))
        #expect(try store.fetch(descriptor).map(\.id) == [3, 4], "the cascade took entries 1 and 2")
        try store.deleteAll(TodoList.self)
        #expect(try store.fetch(descriptor).isEmpty)
        #expect(try store.fetchCount(descriptor) == 0)
        try await store.close()
    }

    @Test func aSortOrPredicateThroughTwoStepsOrAWholeRelationshipIsRefusedByName() async throws {
        let store = try ModelStore(.inMemory, models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        #expect {
            try store.fetch(FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.parent?.list?.title)]))
        } throws: { error in
            (error as? StoreError)?.code == .unsupportedPredicate && "\(error)".contains("to-one relationship's target")
        }
        #expect {
            try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.parent?.list?.title == "x" }))
        } throws: { error in
            (error as? StoreError)?.code == .unsupportedPredicate && "\(error)".contains("one step only")
        }
        try await store.close()
    }

    @Test func aTableTheStoreCreatesHasAnIndexOnEachToOneAndTheRowsOfATargetAreReadThroughIt() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let peek = try Peek(directory.path("db.sqlite"))
        #expect(try peek.value("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entries_by_list_id' AND tbl_name = 'entries'") == .integer(1))
        let plan = try store.compile(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }))
        let select = SQLiteDialect.select(plan.rowsPointing(atAnyOf: [.integer(1), .integer(2)], through: plan.joins[0]), limit: nil)
        let steps = try peek.rows("EXPLAIN QUERY PLAN " + select.sql, select.arguments).map { "\($0[3])" }
        #expect(steps.contains { $0.contains("entries_by_list_id") }, "the rows of lists 1 and 2 are found through the index: \(steps)")
        try await store.close()
    }

    @Test func theSameChainAppendedOrWrittenIsTheSameKeyPath() throws {
        let written: AnyKeyPath = \Entry.list?.title
        let appended = try #require((\Entry.list as AnyKeyPath).appending(path: \TodoList?.?.title))
        #expect(QueryColumns.sameChain(written, appended))
        #expect(!QueryColumns.sameChain(written, try #require((\Entry.list as AnyKeyPath).appending(path: \TodoList?.?.id))))
        #expect(!QueryColumns.sameChain(\Entry.title, \Entry.list?.title))
    }
}

// MARK: - Live lists across a to-one

extension RelatedQueryTests {
    @Test func aLiveListFollowsATargetsChangeAndOnlyThoseRowsAreRead() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let reader = try #require(store.reads.engine as? SQLiteReader)
        let live = try store.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.title)]))
        #expect(live.keys == [2, 1])
        var differences: [FetchedResults<Entry>.Difference] = []
        let subscription = live.onChange { differences.append($0.difference) }
        let chores = try #require(try store.find(TodoList.self, key: 2))

        let before = reader.statementsRun
        chores.title = "Groceries"
        #expect(live.keys == [2, 1, 3])
        #expect(differences.count == 1)
        // The rows that point at list 2, read once (with the lists whose changes are pending).
        #expect(reader.statementsRun - before <= 2)
        #expect(live.keys == (try store.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.title)]))).map { $0.id! })

        // A list that no member points at, and that matches neither before nor after.
        try store.insert(TodoList(id: 3, title: "Empty"))
        let empty = try #require(try store.find(TodoList.self, key: 3))
        empty.title = "Still empty"
        #expect(differences.count == 1, "nothing in the list changed")

        chores.title = "Chores"
        #expect(live.keys == [2, 1])
        #expect(differences.count == 2)
        subscription.cancel()
        try await store.close()
    }

    @Test func aLiveListSortedByTheTargetsColumnMovesTheRowsOfARenamedTarget() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let live = try store.results(for: FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.list?.title), SortDescriptor(\.id)]))
        #expect(live.keys == [4, 3, 1, 2])
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        groceries.title = "Bakery"
        #expect(live.keys == [4, 1, 2, 3])
        let sweep = try #require(try store.find(Entry.self, key: 3))
        sweep.list = nil
        #expect(live.keys == [3, 4, 1, 2])
        try await store.flush()
        #expect(live.keys == (try store.fetch(FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.list?.title), SortDescriptor(\.id)]))).map { $0.id! })
        try await store.close()
    }

    @Test func anotherProcessRenamingATargetOrRepointingARowReachesTheLiveList() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let live = try store.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Groceries" }, sortBy: [SortDescriptor(\.id)]))
        #expect(live.keys == [1, 2])
        let peek = try Peek(directory.path("db.sqlite"))
        try peek.execute("UPDATE lists SET title = 'Groceries' WHERE id = 2")
        try await store.refreshExternalChanges()
        #expect(live.keys == [1, 2, 3])
        try peek.execute("UPDATE entries SET list_id = 2 WHERE id = 4")
        try await store.refreshExternalChanges()
        #expect(live.keys == [1, 2, 3, 4])
        try peek.execute("UPDATE lists SET title = 'Chores' WHERE id = 2; DELETE FROM entries WHERE id = 1")
        try await store.refreshExternalChanges()
        #expect(live.keys == [2])
        try peek.execute("DELETE FROM lists WHERE id = 1")
        try await store.refreshExternalChanges()
        #expect(live.keys.isEmpty)
        try await store.close()
    }

    /// A transaction that changes many targets: the rows pointing at them are read together
    /// once it ends (a read for each 500 targets), not once per target, which cost the square
    /// of the rows waiting to commit; inserted with their rows, and retitled once committed.
    @Test func aTransactionThatChangesManyTargetsReadsTheRowsPointingAtThemTogether() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let reader = try #require(store.reads.engine as? SQLiteReader)
        let descriptor = FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Starred" }, sortBy: [SortDescriptor(\.id)])
        let live = try store.results(for: descriptor)
        let lists = (0..<600).map { TodoList(id: Int64(10 + $0), title: $0 % 2 == 0 ? "Starred" : "Plain") }

        var before = reader.statementsRun
        try store.transaction {
            try store.insert(contentsOf: lists.indices.map { Entry(id: Int64(10 + $0), title: "Imported", list: lists[$0]) })
        }
        #expect(reader.statementsRun - before <= 4, "\(reader.statementsRun - before) statements for 600 new lists")
        #expect(live.keys == stride(from: 10, to: 610, by: 2).map { Int64($0) })
        #expect(live.keys == (try store.fetch(descriptor)).map(\.id))

        try await store.flush()
        before = reader.statementsRun
        try store.transaction {
            for list in lists { list.title = list.title == "Starred" ? "Plain" : "Starred" }
        }
        #expect(reader.statementsRun - before <= 4, "\(reader.statementsRun - before) statements for 600 retitled lists")
        #expect(live.keys == stride(from: 11, to: 610, by: 2).map { Int64($0) })
        #expect(live.keys == (try store.fetch(descriptor)).map(\.id))
        try await store.close()
    }

    /// An observer of one live list, told of a transaction, finds a list across a to-one that
    /// the same transaction changed current: the rows pointing at a changed target are placed
    /// before any live list publishes.
    @Test func anObserverOfOneListFindsAListAcrossAToOneCurrent() async throws {
        let directory = try TemporaryDirectory()
        let store = try await lists(in: directory)
        let new = try store.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.title == "New" }))
        let done = try store.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Done" }, sortBy: [SortDescriptor(\.id)]))
        var seen: [[Int64?]] = []
        let subscription = new.onChange { _ in seen.append(done.keys) }
        let chores = try #require(try store.find(TodoList.self, key: 2))
        try store.transaction {
            try store.insert(Entry(id: 5, title: "New"))
            chores.title = "Done"
        }
        #expect(seen == [[3]])
        subscription.cancel()
        try await store.close()
    }
}

// MARK: - Prefetching and repeated reads

extension RelatedQueryTests {
    @Test func prefetchingChildrenReadsThemOnceForAllParentsAndReadingThemAsksNothing() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let reader = try #require(store.reads.engine as? SQLiteReader)
        var descriptor = FetchDescriptor<TodoList>(sortBy: [SortDescriptor(\.id)])
        descriptor.relationshipKeyPathsForPrefetching = [\.entries]
        let before = reader.statementsRun
        let lists = try store.fetch(descriptor)
        #expect(reader.statementsRun - before == 2, "the lists, then every list's entries in one read")
        #expect(lists.map { $0.entries.map(\.id) } == [[1, 2], [3]])
        #expect(reader.statementsRun - before == 2, "reading the prefetched entries asks nothing")
        #expect(lists[0].entries[0] === (try store.find(Entry.self, key: 1)))

        // The record follows changes: a re-parented child moves at once.
        let sweep = try #require(try store.find(Entry.self, key: 3))
        sweep.list = lists[0]
        #expect(lists[0].entries.map(\.id) == [1, 2, 3])
        #expect(lists[1].entries.isEmpty)
        try await store.close()
    }

    @Test func aSecondReadOfAToManyAsksNothingWhileItsChildrenAreAlive() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let reader = try #require(store.reads.engine as? SQLiteReader)
        let groceries = try #require(try store.find(TodoList.self, key: 1))
        let before = reader.statementsRun
        let entries = groceries.entries
        #expect(reader.statementsRun - before == 1)
        #expect(groceries.entries.map(\.id) == entries.map(\.id))
        #expect(reader.statementsRun - before == 1, "the children read last time, no change told since")
        // Another process adds a child: the record is told, and the next read asks again.
        try Peek(directory.path("db.sqlite")).execute("INSERT INTO entries (id, title, list_id) VALUES (9, 'Jam', 1)")
        try await store.refreshExternalChanges()
        let after = reader.statementsRun
        #expect(groceries.entries.map(\.id) == [1, 2, 9])
        #expect(reader.statementsRun - after == 1)
        try await store.close()
    }

    @Test func prefetchingTargetsReadsThemOnceAndTheRowsHoldThem() async throws {
        let directory = try TemporaryDirectory()
        try await lists(in: directory).close()
        let store = try reopen(directory)
        let reader = try #require(store.reads.engine as? SQLiteReader)
        var descriptor = FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.id)])
        descriptor.relationshipKeyPathsForPrefetching = [\.list]
        let before = reader.statementsRun
        let entries = try store.fetch(descriptor)
        #expect(reader.statementsRun - before == 2, "the entries, then both lists in one read")
        #expect(entries.map { $0.list?.title } == ["Groceries", "Groceries", "Chores", nil])
        #expect(entries[0].list === entries[1].list)
        #expect(reader.statementsRun - before == 2, "reading the prefetched lists asks nothing")
        try await store.close()
    }

    @Test func prefetchingWhatIsNoRelationshipIsRefusedByName() async throws {
        let store = try ModelStore(.inMemory, models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        var descriptor = FetchDescriptor<Entry>()
        descriptor.relationshipKeyPathsForPrefetching = [\.title]
        try store.insert(Entry(id: 1, title: "Milk"))
        #expect {
            try store.fetch(descriptor)
        } throws: { error in
            (error as? StoreError)?.code == .unsupportedPredicate && "\(error)".contains("which is no relationship of Entry")
        }
        try await store.close()
    }
}
