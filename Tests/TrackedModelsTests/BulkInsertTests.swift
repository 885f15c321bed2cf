import Foundation
import Testing
@testable import TrackedModels

/// `bulkInsert(contentsOf:)`: rows streamed into one transaction, committed whole or not at all
/// together with the changes pending before it, checked through a second connection.
@MainActor
@Suite struct BulkInsertTests {
    private struct Fixture {
        let directory: TemporaryDirectory
        let path: String
        let store: ModelStore
        let peek: Peek
    }

    private func fixture(rows: Int = 0) async throws -> Fixture {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        let store = try ModelStore(.file(path), models: [Row.self, Note.self], configuration: Stores.configuration())
        try store.insert(contentsOf: (0..<Int64(rows)).map { Row(id: $0, title: "old \($0)", count: 0) })
        try await store.flush()
        return Fixture(directory: directory, path: path, store: store, peek: try Peek(path))
    }

    private func rows(_ range: Range<Int64>, title: String = "new") -> some Sequence<Row> {
        range.lazy.map { Row(id: $0, title: "\(title) \($0)", count: Int($0 % 7)) }
    }

    @Test func rowsAreCommittedInOneTransactionWhenItReturns() async throws {
        let fixture = try await fixture()
        let commits = fixture.store.writerStatistics.commits
        try await fixture.store.bulkInsert(contentsOf: rows(0..<10_001))
        #expect(fixture.store.writerStatistics.commits - commits == 1)
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 10_001)
        #expect(try fixture.peek.value("SELECT sum(count) FROM rows") == .integer((0..<10_001).reduce(0) { $0 + $1 % 7 }))
        #expect(try fixture.peek.value("SELECT title FROM rows WHERE id = 10000") == "new 10000")
        #expect(!fixture.store.hasPendingChanges)
    }

    @Test func anEmptySequenceCommitsThePendingChanges() async throws {
        let fixture = try await fixture(rows: 3)
        let row = try #require(try fixture.store.find(Row.self, key: 1))
        row.title = "pending"
        try await fixture.store.bulkInsert(contentsOf: rows(0..<0))
        #expect(try fixture.peek.value("SELECT title FROM rows WHERE id = 1") == "pending")
    }

    @Test func deleteAllThenABulkInsertReplacesTheTableAsOneUnit() async throws {
        let fixture = try await fixture(rows: 100)
        try fixture.store.deleteAll(Row.self)
        try await fixture.store.bulkInsert(contentsOf: rows(50..<5_050))
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 5_000)
        #expect(try fixture.peek.value("SELECT count(*) FROM rows WHERE title LIKE 'old %'") == 0)
    }

    @Test func aRefusedRowCommitsNothingAndKeepsThePendingChangesPending() async throws {
        let fixture = try await fixture(rows: 100)
        try fixture.store.deleteAll(Row.self)
        // Row 4,000 comes twice, in different chunks.
        let duplicated = rows(0..<5_000).lazy.map { $0 }.prefix(5_000)
        let stream = Array(duplicated) + [Row(id: 4_000, title: "again", count: 0)]
        do {
            try await fixture.store.bulkInsert(contentsOf: stream)
            Issue.record("a duplicate key was inserted")
        } catch let error as StoreError {
            #expect(error.code == .constraintRefused)
            #expect(error.message.contains("inserting row 4000 into rows"))
        }
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 100)
        #expect(try fixture.peek.value("SELECT count(*) FROM rows WHERE title LIKE 'old %'") == 100)
        // The deleteAll is still pending, and commits on its own with the next flush.
        #expect(fixture.store.pendingChanges.count == 1)
        try await fixture.store.flush()
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 0)
    }

    @Test func aFullDiskCommitsNothing() async throws {
        let fixture = try await fixture(rows: 100)
        guard case .integer(let pages) = try fixture.peek.value("PRAGMA page_count") else { throw CancellationError() }
        _ = try fixture.store.worker.withEngine { try ($0 as? SQLiteWriter)?.pragma("max_page_count", Int(pages) + 4) }
        await #expect(throws: StoreError.self) {
            try await fixture.store.bulkInsert(contentsOf: rows(100..<20_100, title: String(repeating: "long ", count: 20)))
        }
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 100)
        _ = try fixture.store.worker.withEngine { try ($0 as? SQLiteWriter)?.pragma("max_page_count", 1_000_000) }
        try await fixture.store.bulkInsert(contentsOf: rows(100..<200))
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 200)
    }

    @Test func cancellingTheTaskRollsBackEverything() async throws {
        let fixture = try await fixture(rows: 10)
        try fixture.store.deleteAll(Row.self)
        let started = AsyncStream.makeStream(of: Void.self)
        let store = fixture.store
        let insertion = Task {
            try await store.bulkInsert(contentsOf: (10..<Int64.max).lazy.map { id in
                if id == 50_000 { started.continuation.yield() }
                return Row(id: id, title: "endless", count: 0)
            })
        }
        for await _ in started.stream { break }
        insertion.cancel()
        await #expect(throws: CancellationError.self) { try await insertion.value }
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 10)
        #expect(fixture.store.hasPendingChanges, "the deleteAll pending before the bulk insert stays pending")
    }

    @Test func keysLeftNilAreAssignedByTheDatabase() async throws {
        let fixture = try await fixture()
        try await fixture.store.bulkInsert(contentsOf: (0..<3_000).lazy.map { Note(id: nil, text: "note \($0)") })
        #expect(try fixture.peek.value("SELECT count(DISTINCT id) FROM notes") == 3_000)
        #expect(try fixture.peek.value("SELECT text FROM notes ORDER BY id DESC LIMIT 1") == "note 2999")
    }

    @Test func theObjectsStayDetached() async throws {
        let fixture = try await fixture()
        let kept = Row(id: 7, title: "kept", count: 0)
        try await fixture.store.bulkInsert(contentsOf: [kept])
        kept.title = "changed after"
        try await fixture.store.flush()
        #expect(try fixture.peek.value("SELECT title FROM rows WHERE id = 7") == "kept")
        let fetched = try #require(try fixture.store.find(Row.self, key: 7))
        #expect(fetched !== kept)
        #expect(fetched.title == "kept")
    }

    @Test func subscribersHearOneResetAndLiveResultsAgreeWithAFetch() async throws {
        let fixture = try await fixture(rows: 20)
        let list = try fixture.store.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 3 }, sortBy: [SortDescriptor(\.count, order: .reverse)]))
        var events: [ChangeEvent] = []
        let token = try fixture.store.subscribe(to: .table(Row.self)) { events.append($0) }
        try await fixture.store.bulkInsert(contentsOf: rows(20..<3_020))
        #expect(events.map(\.kind) == [.reset])
        let fetched = try fixture.store.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 3 }, sortBy: [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.id)]))
        #expect(list.map(\.id) == fetched.map(\.id))
        token.cancel()
    }

    @Test func anotherStoreHearsOneResetAndTheLogHoldsOneEntry() async throws {
        let fixture = try await fixture(rows: 10)
        let watcher = try ModelStore(.file(fixture.path), models: [Row.self], configuration: Stores.configuration())
        let list = try watcher.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count == 3 }, sortBy: [SortDescriptor(\.id)]))
        var kinds: [ChangeEvent.Kind] = []
        let token = try watcher.subscribe(to: .table(Row.self)) { kinds.append($0.kind) }
        guard case .integer(let logged) = try fixture.peek.value("SELECT count(*) FROM trackedmodels_changes") else { throw CancellationError() }
        try await fixture.store.bulkInsert(contentsOf: rows(10..<50_010))
        #expect(try fixture.peek.value("SELECT count(*) FROM trackedmodels_changes") == .integer(logged + 1))
        try await watcher.refreshExternalChanges()
        #expect(kinds == [.reset])
        #expect(list.count == (10..<50_010).count { $0 % 7 == 3 })
        #expect(list.map(\.id) == (try watcher.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count == 3 }, sortBy: [SortDescriptor(\.id)]))).map(\.id))
        // The insert trigger is back: a single insert is logged as one row again.
        try fixture.peek.execute("INSERT INTO rows (id, title, count) VALUES (-1, 'by hand', 3)")
        try await watcher.refreshExternalChanges()
        #expect(kinds == [.reset, .insert])
        #expect(list.first?.id == -1)
        token.cancel()
        try await watcher.close()
    }

    @Test func aBulkInsertBehindAPartlyRefusedBatchFailsInsteadOfReportingSuccess() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try Peek(path).execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL CHECK (count < 100))")
        var configuration = Stores.configuration()
        configuration.pendingThreshold = 1  // every change is submitted at once
        let store = try await Stores.rows(3, at: .file(path), configuration: configuration)
        let row = try #require(try store.find(Row.self, key: 1))
        row.count = 500  // refused by the CHECK, in a batch already handed to the worker
        do {
            try await store.bulkInsert(contentsOf: rows(10..<5_000))
            Issue.record("the bulk insert reported success")
        } catch let error as StoreError {
            #expect(error.code == .changeRejected)
        }
        let peek = try Peek(path)
        #expect(try peek.value("SELECT count(*) FROM rows") == 3)
    }

    @Test func aPendingChangeRefusedInTheBulkTransactionIsMarkedAsAFlushMarksIt() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try Peek(path).execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL CHECK (count < 100))")
        let store = try await Stores.rows(3, at: .file(path))
        let row = try #require(try store.find(Row.self, key: 1))
        row.count = 500
        do {
            try await store.bulkInsert(contentsOf: rows(10..<5_000))
            Issue.record("the bulk insert committed with a refused change")
        } catch let error as StoreError {
            #expect(error.code == .changeRejected)
            #expect(error.constraint == .check)
        }
        let refused = try #require(store.pendingChanges.first)
        #expect(refused.error != nil, "the refused change is not marked")
        try store.discard(refused)
        try await store.bulkInsert(contentsOf: rows(10..<5_000))
        #expect(try Peek(path).value("SELECT count(*) FROM rows") == 4_993)
    }

    @Test func aChangeRefusedForGoodStopsABulkInsertBeforeItStarts() async throws {
        let fixture = try await fixture(rows: 5)
        let row = try #require(try fixture.store.find(Row.self, key: 2))
        try fixture.peek.execute("DELETE FROM rows WHERE id = 2")
        row.title = "its row is gone"
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        try fixture.store.deleteAll(Row.self)  // held behind the refused change
        do {
            try await fixture.store.bulkInsert(contentsOf: rows(100..<200))
            Issue.record("the bulk insert committed without the deleteAll held behind a refused change")
        } catch let error as StoreError {
            #expect(error.code == .changeRejected)
        }
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 4)
        #expect(fixture.store.pendingChanges.count == 2)
    }

    @Test func twoBulkInsertsAtOnceEachHearTheirOwnOutcome() async throws {
        let fixture = try await fixture()
        let store = fixture.store
        let good = Task { try await store.bulkInsert(contentsOf: rows(0..<30_000)) }
        let bad = Task { try await store.bulkInsert(contentsOf: Array(rows(30_000..<40_000)) + [Row(id: 35_000, title: "twice", count: 0)]) }
        try await good.value
        await #expect(throws: StoreError.self) { try await bad.value }
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 30_000)
    }

    @Test func aCancelledBulkInsertDoesNotFailAnotherTasksFlush() async throws {
        let fixture = try await fixture(rows: 5)
        let store = fixture.store
        let row = try #require(try store.find(Row.self, key: 3))
        let started = AsyncStream.makeStream(of: Void.self)
        let insertion = Task {
            try await store.bulkInsert(contentsOf: (10..<Int64.max).lazy.map { id in
                if id == 20_000 { started.continuation.yield() }
                return Row(id: id, title: "endless", count: 0)
            })
        }
        for await _ in started.stream { break }
        row.title = "flushed by another task"
        let flushing = Task { try await store.flush() }
        insertion.cancel()
        await #expect(throws: CancellationError.self) { try await insertion.value }
        try await flushing.value
        #expect(try fixture.peek.value("SELECT title FROM rows WHERE id = 3") == "flushed by another task")
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 5)
    }

    @Test func writesMadeWhileRowsStreamCommitAfterThem() async throws {
        let fixture = try await fixture(rows: 5)
        let row = try #require(try fixture.store.find(Row.self, key: 2))
        let store = fixture.store
        let insertion = Task { try await store.bulkInsert(contentsOf: rows(5..<200_005)) }
        await Task.yield()
        row.title = "written meanwhile"
        try store.increment(\Row.count, of: row, by: 3)
        try await insertion.value
        try await fixture.store.flush()
        #expect(try fixture.peek.value("SELECT title || ':' || count FROM rows WHERE id = 2") == "written meanwhile:3")
        #expect(try fixture.peek.value("SELECT count(*) FROM rows") == 200_005)
    }
}
