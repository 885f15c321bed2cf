import Foundation
import Synchronization
import Testing
@testable import TrackedModels

/// Write-behind: changes are coalesced and written in batches, only what changed, and kept
/// pending until they commit. The tests that touch a database run on each engine.
@MainActor
@Suite struct WriteBehindTests {
    @Test(arguments: TestEngine.allCases)
    func flushMakesChangesVisibleToAnotherConnection(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(10, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(4)))
        row.title = "Renamed"
        row.count = 9
        #expect(try await engine.sql(database, "SELECT title FROM rows WHERE id = 4") == "Row 4")
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT title, count FROM rows WHERE id = 4") == "Renamed|9")
    }

    @Test(arguments: TestEngine.allCases)
    func aMillionAssignmentsToOneCellMakeOneUpdate(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(1, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(0)))
        let before = store.writerStatistics
        for value in 1...1_000_000 { row.count = value }
        try await store.flush()
        let after = store.writerStatistics
        #expect(after.rowStatements - before.rowStatements == 1)
        #expect(after.commits - before.commits == 1)
        #expect(try await engine.sql(database, "SELECT count FROM rows") == "1000000")
    }

    @Test(arguments: TestEngine.allCases)
    func onlyChangedRowsAreWritten(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await Stores.rows(100, on: engine, in: directory)
        let rows = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        let before = store.writerStatistics.rowStatements
        rows[3].count = 1
        rows[70].title = "x"
        rows[70].count = 2
        try await store.flush()
        #expect(store.writerStatistics.rowStatements - before == 2)
    }

    @Test func anEqualValueIsNoChange() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        row.title = "Row 0"
        row.count = 0
        #expect(!store.hasPendingChanges)
    }

    @Test(arguments: TestEngine.allCases)
    func closeFlushes(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(2, on: engine, in: directory)
        try #require(try await store.async.find(Row.self, key: Int64(1))).count = 42
        try await store.close()
        #expect(try await engine.sql(database, "SELECT count FROM rows WHERE id = 1") == "42")
    }

    @Test(arguments: TestEngine.allCases)
    func theIntervalFlushesWithoutBeingAsked(_ engine: TestEngine) async throws {
        var configuration = Stores.configuration()
        configuration.flushInterval = .milliseconds(20)
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(1, on: engine, in: directory, configuration: configuration)
        try #require(try await store.async.find(Row.self, key: Int64(0))).count = 7
        let deadline = ContinuousClock.now + .seconds(10)
        while try await engine.sql(database, "SELECT count FROM rows") != "7", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await engine.sql(database, "SELECT count FROM rows") == "7")
        #expect(store.writerStatistics.commits == 2)
    }

    @Test(arguments: TestEngine.allCases)
    func theThresholdFlushesWithoutWaitingForTheInterval(_ engine: TestEngine) async throws {
        var configuration = Stores.configuration()
        configuration.pendingThreshold = 10
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(10, on: engine, in: directory, configuration: configuration)
        for row in try await store.async.fetch(FetchDescriptor<Row>()) { row.count = 1 }
        let deadline = ContinuousClock.now + .seconds(10)
        while try await engine.sql(database, "SELECT sum(count) FROM rows") != "10", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try await engine.sql(database, "SELECT sum(count) FROM rows") == "10")
    }

    @Test(arguments: TestEngine.allCases)
    func incrementsCoalesceAndTheObjectHoldsTheCommittedValue(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(1, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(0)))
        for _ in 0..<100 { try store.increment(\Row.count, of: row, by: 1) }
        #expect(row.count == 100)
        // Another writer bumps the same row meanwhile: the delta adds to it.
        try await engine.sql(database, "UPDATE rows SET count = count + 1000")
        let before = store.writerStatistics.rowStatements
        try await store.flush()
        #expect(store.writerStatistics.rowStatements - before == 1)
        #expect(row.count == 1_100)
        #expect(try await engine.sql(database, "SELECT count FROM rows") == "1100")
    }

    @Test(arguments: TestEngine.allCases)
    func incrementOverflowIsAnErrorAndChangesNothing(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try await Stores.rows(1, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(0)))
        row.count = Int.max
        try await store.flush()
        #expect { try store.increment(\Row.count, of: row, by: 1) } throws: { ($0 as? StoreError)?.code == .overflow }
        #expect(row.count == Int.max)
        #expect(!store.hasPendingChanges)
    }

    @Test(arguments: TestEngine.allCases)
    func anUpdateQueuedBeforeADeleteNeverResurrectsTheRow(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(2, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(1)))
        row.count = 5
        try store.delete(row)
        row.count = 6
        try await store.flush()
        #expect(try await engine.sql(database, "SELECT count(*) FROM rows") == "1")
        #expect(try await store.async.fetchCount(FetchDescriptor<Row>()) == 1)
    }

    @Test(arguments: TestEngine.allCases)
    func anUpdateBeforeAnInsertIsKeptAndOrdered(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(2, on: engine, in: directory)
        let old = try #require(try await store.async.find(Row.self, key: Int64(1)))
        old.title = "about to go"
        try store.delete(old)
        let other = try #require(try await store.async.find(Row.self, key: Int64(0)))
        other.count = 3
        let replacement = Row(id: 1, title: "replacement", count: 1)
        try store.insert(replacement)
        replacement.count = 2
        try await store.flush()
        let reread = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        #expect(reread.map(\.count) == [3, 2])
        #expect(reread[1].title == "replacement")
        #expect(reread[1] === replacement)
        #expect(try await engine.sql(database, "SELECT id, title, count FROM rows ORDER BY id") == "0|Row 0|3\n1|replacement|2")
    }

    @Test(arguments: TestEngine.allCases)
    func aRefusedChangeStaysPendingWhileAnUnrelatedOneCommits(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(2, on: engine, in: directory, refusingCountsFrom: 100)
        let errors = store.writeErrors
        let row = try #require(try await store.async.find(Row.self, key: 0))
        row.count = 500
        let commitsBefore = store.writerStatistics.commits
        await #expect(throws: StoreError.self) { try await store.flush() }
        #expect(store.writerStatistics.commits == commitsBefore)   // nothing left to commit: no transaction
        try #require(try await store.async.find(Row.self, key: 1)).title = "committed anyway"
        do {
            try await store.flush()
            Issue.record("the CHECK constraint did not fail the flush")
        } catch let error as StoreError where error.code == .changeRejected {
            #expect(error.message.contains("update rows 0: count = 500 (integer)"))
            #expect(error.constraint == .check)
            #expect((error.underlying as? StoreError)?.code == .constraintRefused)
        }
        var iterator = errors.makeAsyncIterator()
        let reported = await iterator.next()
        #expect(reported?.code == .constraintRefused)
        #expect(reported?.constraint == .check)
        #expect(store.pendingChanges.map(\.operations) == [["update rows 0: count = 500"]])
        #expect(store.pendingChanges[0].error != nil)
        #expect(try await engine.sql(database, "SELECT id, title, count FROM rows ORDER BY id") == "0|Row 0|0\n1|committed anyway|0")
        // flush() keeps throwing while the change is stuck: nothing is skipped silently.
        await #expect(throws: StoreError.self) { try await store.flush() }
        // A valid value replaces the refused one.
        row.count = 50
        try await store.flush()
        #expect(!store.hasPendingChanges)
        #expect(try await engine.sql(database, "SELECT count FROM rows WHERE id = 0") == "50")
    }

    @Test(arguments: TestEngine.allCases)
    func aDroppedTableIsReportedAndTheChangeStaysPending(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let (store, database) = try await Stores.rows(1, on: engine, in: directory)
        let row = try #require(try await store.async.find(Row.self, key: Int64(0)))
        try await engine.sql(database, "DROP TABLE rows")
        row.count = 1
        await #expect(throws: StoreError.self) { try await store.flush() }
        #expect(store.pendingChanges.map(\.operations) == [["update rows 0: count = 1"]])
        await #expect(throws: StoreError.self) { try await store.close() }
        store.discardPendingChanges()
        try await store.close()
    }

    @Test func fullDurabilityCommitsWithSynchronousFull() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        var configuration = Stores.configuration()
        configuration.durability = .full
        let store = try await Stores.rows(1, at: .file(path), configuration: configuration)
        #expect(try store.worker.withEngine { try ($0 as? SQLiteWriter)?.pragma("synchronous") } == 2)
        try #require(try store.find(Row.self, key: Int64(0))).count = 1
        try await store.flush()
        #expect(try Peek(path).value("SELECT count FROM rows") == 1)
    }

    @Test func aBusyDatabaseIsRetriedAndThenCommits() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        var configuration = Stores.configuration()
        configuration.busyTimeout = .milliseconds(20)
        configuration.maxBusyRetries = 8
        let store = try await Stores.rows(1, at: .file(path), configuration: configuration)
        // Another connection holds the write lock until the writer has retried once. It runs
        // on a thread of its own: tasks of other tests that block the cooperative threads
        // cannot delay the release past the writer's last retry. The deadline only keeps a
        // writer that never tries from hanging the run: on a loaded CI machine the flush can
        // take tens of seconds to reach the writer, so a release at the deadline is reported
        // as such rather than as a commit that was never retried.
        let (acquired, signal) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<(any Error)?>.makeStream()
        let worker = store.worker
        Thread {
            do {
                let locker = try Peek(path)
                try locker.execute("BEGIN IMMEDIATE")
                signal.finish()
                let deadline = ContinuousClock.now + .seconds(300)
                while worker.statistics.withLock({ $0.busyRetries }) == 0 {
                    guard ContinuousClock.now < deadline else {
                        struct NeverRetried: Error, CustomStringConvertible {
                            var description: String { "the writer did not retry under the held lock within 300 s" }
                        }
                        try locker.execute("COMMIT")
                        throw NeverRetried()
                    }
                    Thread.sleep(forTimeInterval: 0.005)
                }
                try locker.execute("COMMIT")
                release.yield(nil)
            } catch {
                signal.finish()
                release.yield(error)
            }
            release.finish()
        }.start()
        for await _ in acquired {}
        try #require(try store.find(Row.self, key: Int64(0))).count = 3
        try await store.flush()
        for await failure in released {
            if let failure { throw failure }
        }
        #expect(store.writerStatistics.busyRetries > 0)
        #expect(try Peek(path).value("SELECT count FROM rows") == 3)
    }

    @Test func aDatabaseBusyPastEveryRetryIsReportedAndKept() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        var configuration = Stores.configuration()
        configuration.busyTimeout = .milliseconds(10)
        configuration.maxBusyRetries = 1
        let store = try await Stores.rows(1, at: .file(path), configuration: configuration)
        let locker = try Peek(path)
        try locker.execute("BEGIN IMMEDIATE")
        try #require(try store.find(Row.self, key: Int64(0))).count = 4
        do {
            try await store.flush()
            Issue.record("the flush committed under another connection's write lock")
        } catch let error as StoreError where error.code == .busy {
            #expect(error.mayPass)
        }
        #expect(store.pendingChanges.map(\.operations) == [["update rows 0: count = 4"]])
        try locker.execute("COMMIT")
        try await store.flush()
        #expect(try Peek(path).value("SELECT count FROM rows") == 4)
    }
}

extension PendingChanges {
    /// A write as the registrar makes it, with a hint of its own.
    mutating func write(_ write: CellWrite, to cell: CellReference, of object: AnyObject) {
        var hint = UnitHint()
        self.write(write, to: cell, of: object, hint: &hint)
    }
}

@Suite struct PendingChangesTests {
    private let row = RowReference(table: 0, key: .integer(1))
    private final class Object {}

    @Test func aCellsPendingWriteMergesOverEveryPendingUnitOfItsRow() {
        var pending = PendingChanges()
        let object = Object()
        let count = CellReference(row: row, column: 2)
        pending.write(.add(2), to: count, of: object)
        pending.write(.add(3), to: count, of: object)
        #expect(pending.write(to: count) == .add(5))
        #expect(pending.write(to: CellReference(row: row, column: 1)) == nil)
        // A delete closes the row's unit; a later write opens a new one after it.
        pending.delete(row, of: object)
        pending.write(.add(4), to: count, of: object)
        #expect(pending.write(to: count) == .add(9))
        #expect(pending.operationCount == 3)
        #expect(pending.takeReady(retryingRejected: false, linkColumns: [[], []]).count == 3)
        #expect(pending.write(to: count) == nil)
        #expect(pending.isEmpty)
    }

    @Test func aRowDeletedAndInsertedAgainIsKnownToBeInSeveralUnits() {
        // Found by the reference model's invariant check: a delete of a row with no pending
        // unit, then an insert of it, left the row unmarked.
        var pending = PendingChanges()
        let object = Object()
        pending.delete(row, of: object)
        pending.insert(InsertRequest(table: 0, values: [.integer(1), .text("again"), .integer(0)], row: row, id: 1), of: object)
        pending.checkInvariants()
        #expect(pending.write(to: CellReference(row: row, column: 1)) == .set(.text("again")))
    }

    @Test func aTransactionIsOneUnitClosedToLaterWrites() {
        var pending = PendingChanges()
        let object = Object()
        let other = RowReference(table: 0, key: .integer(2))
        pending.write(.set(.text("before")), to: CellReference(row: row, column: 1), of: object)
        pending.beginTransaction()
        pending.write(.add(1), to: CellReference(row: row, column: 2), of: object)
        pending.write(.add(1), to: CellReference(row: other, column: 2), of: object)
        pending.deleteAll(table: 1)
        pending.endTransaction(keeping: true)
        pending.write(.add(5), to: CellReference(row: row, column: 2), of: object)
        let units = pending.takeReady(retryingRejected: false, linkColumns: [[], []])
        #expect(units.map(\.unit.operations.count) == [1, 3, 1])
        #expect(units.map(\.isTransaction) == [false, true, false])
    }

    @Test func aRejectedUnitHoldsBackLaterUnitsOfItsRowsOnly() {
        var pending = PendingChanges()
        let object = Object()
        let other = RowReference(table: 0, key: .integer(2))
        let third = RowReference(table: 0, key: .integer(3))
        pending.write(.set(.integer(500)), to: CellReference(row: row, column: 2), of: object)
        var rejected = pending.takeReady(retryingRejected: false, linkColumns: [[], []])[0]
        rejected.rejection = PendingChanges.Rejection(error: SQLiteError(code: .constraintCheck, message: "CHECK").storeError, operation: 0)
        pending.restore([rejected])
        // A transaction touching the rejected row waits behind it; a change of another row does not.
        pending.beginTransaction()
        pending.write(.add(1), to: CellReference(row: other, column: 2), of: object)
        pending.delete(row, of: object)
        pending.endTransaction(keeping: true)
        // The transaction touches `other` too, so a later change of `other` waits as well.
        pending.write(.set(.text("x")), to: CellReference(row: other, column: 1), of: object)
        pending.write(.set(.text("y")), to: CellReference(row: third, column: 1), of: object)
        let ready = pending.takeReady(retryingRejected: false, linkColumns: [[], []])
        #expect(ready.map(\.unit.operations.first?.row) == [third])
        #expect(pending.all.map(\.isTransaction) == [false, true, false])
        // Retrying takes the rejected unit and what waits behind it, in order.
        var retried = pending
        #expect(retried.takeReady(retryingRejected: true, linkColumns: [[], []]).count == 3)
    }

    @Test func writingToARejectedRowReplacesTheRefusedValue() {
        var pending = PendingChanges()
        let object = Object()
        let count = CellReference(row: row, column: 2)
        pending.write(.set(.integer(500)), to: count, of: object)
        var rejected = pending.takeReady(retryingRejected: false, linkColumns: [[], []])[0]
        rejected.rejection = PendingChanges.Rejection(error: SQLiteError(code: .constraintCheck, message: "CHECK").storeError, operation: 0)
        pending.restore([rejected])
        #expect(pending.takeReady(retryingRejected: false, linkColumns: [[], []]).isEmpty)
        pending.write(.set(.integer(50)), to: count, of: object)
        #expect(pending.all.count == 1)
        #expect(pending.write(to: count) == .set(.integer(50)))
        // It keeps its error until it is tried again, at the next commit.
        #expect(pending.all[0].rejection != nil)
        #expect(pending.takeReady(retryingRejected: false, linkColumns: [[], []]).count == 1)
    }

    @Test func aHintNeverSendsAWriteToAnotherRowsUnit() {
        var pending = PendingChanges()
        let object = Object()
        let other = RowReference(table: 0, key: .integer(2))
        var hint = PendingChanges.UnitHint()
        pending.write(.set(.integer(1)), to: CellReference(row: row, column: 2), of: object, hint: &hint)
        pending.write(.set(.integer(2)), to: CellReference(row: row, column: 2), of: object, hint: &hint)
        // The same (stale for this row) hint, used for another row: the row's own unit gets it.
        pending.write(.set(.integer(9)), to: CellReference(row: other, column: 2), of: object, hint: &hint)
        #expect(pending.write(to: CellReference(row: row, column: 2)) == .set(.integer(2)))
        #expect(pending.write(to: CellReference(row: other, column: 2)) == .set(.integer(9)))
        // A delete closes the row's unit: a hint from before it goes nowhere near it.
        var rowHint = PendingChanges.UnitHint()
        pending.write(.set(.integer(3)), to: CellReference(row: row, column: 2), of: object, hint: &rowHint)
        pending.delete(row, of: object)
        pending.write(.set(.integer(4)), to: CellReference(row: row, column: 2), of: object, hint: &rowHint)
        let units = pending.takeReady(retryingRejected: false, linkColumns: [[], []])
        #expect(units.map { $0.unit.operations.count } == [1, 1, 1, 1])
        #expect(units.last?.unit.operations.first?.row == row)
    }
}
