import Foundation
import Synchronization
import Testing
@testable import TrackedModels

/// Reads over rows with changes not yet committed: raw SQL runs over the table as the store
/// shows it, whatever the number of pending rows, with the caller's own parameters and the
/// real table's column types; and a new object's changes made while its insert is in flight
/// reach its row, whoever holds the store.
@MainActor
@Suite struct PendingReadTests {
    @Tracked(table: "tallies")
    final class Tally {
        @PrimaryKey var id: Int64?
        var label: String
        var count: Int
    }

    /// A file whose `rows` table has a column the model does not map (`note`, with a default),
    /// rows 1 to 5 with counts 10 to 50, and a store over it.
    func rowsWithAnExtraColumn(in directory: TemporaryDirectory) throws -> (store: ModelStore, path: String) {
        let path = directory.path("db.sqlite")
        let connection = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
        try connection.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL, note TEXT DEFAULT 'plain')")
        for key in 1...5 { try connection.execute("INSERT INTO rows (id, title, count, note) VALUES (\(key), 'Row \(key)', \(key * 10), 'note \(key)')") }
        return (try ModelStore(.file(path), models: [Row.self], configuration: Stores.configuration()), path)
    }

    @Test func rawSQLBindsOnlyTheCallersNumberedParametersOverPendingRows() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try rowsWithAnExtraColumn(in: directory)
        try #require(try store.find(Row.self, key: 2)).count = 5
        try store.insert(Row(id: 9, title: "Row 9", count: 90))
        let found = try store.fetch(Row.self, where: "count > ?2 AND count < ?1", [60, 6], orderBy: "id")
        #expect(found.map(\.id) == [1, 3, 4, 5])
        #expect(try store.count(Row.self, where: "count >= ?1 OR id = ?1", [90]) == 1)
        try await store.close()
    }

    @Test func pendingValuesCompareWithTheColumnsAffinity() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try rowsWithAnExtraColumn(in: directory)
        try #require(try store.find(Row.self, key: 3)).count = 7
        // Text compared with an INTEGER column is converted to a number, as for committed rows.
        #expect(try store.fetch(Row.self, where: "count = '7'").map(\.id) == [3])
        #expect(try store.fetch(Row.self, where: "count = '40'").map(\.id) == [4])
        try await store.close()
    }

    @Test func rowidAndColumnsOutsideTheModelAreThereForPendingRows() async throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try rowsWithAnExtraColumn(in: directory)
        try #require(try store.find(Row.self, key: 4)).title = "changed"
        try store.insert(Row(id: 8, title: "Row 8", count: 1))
        #expect(try store.fetch(Row.self, where: "rowid = 4 AND title = 'changed'").map(\.id) == [4])
        #expect(try store.fetch(Row.self, where: "rowid = 8").map(\.id) == [8])
        #expect(try store.fetch(Row.self, where: "note = 'note 4'").map(\.id) == [4])
        #expect(try store.count(Row.self, where: "note IS NULL") == 1, "a row not committed yet has no value in a column outside the model")
        try await store.close()
    }

    /// Found from outside: `list.items` with 60,000 pending children returned `[]` (the
    /// pending rows were bound as parameters, past SQLite's limit, and the error was dropped).
    @Test(arguments: TestEngine.allCases)
    func aListWithSixtyThousandPendingChildrenReadsThemAll(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database, models: [TodoList.self, Entry.self])
        let list = TodoList(id: 1, title: "Long")
        try store.insert(list)
        try await store.flush()
        let count = 60_000
        try store.insert(contentsOf: (1...count).map { Entry(id: Int64($0), title: "Entry \($0)", list: list) })
        try await store.async.prefetch([\TodoList.entries], of: [list])
        #expect(list.entries.count == count)
        #expect(try await store.async.count(Entry.self, where: "list_id = \(engine == .sqlite ? "?1" : "$1")", [1]) == count)
        try await store.close()
    }

    /// A new object's changes made while its insert is in flight change its row by the key's
    /// placeholder: they commit with a store released without `close()`, and an increment
    /// stays an increment.
    /// Holds the worker's first commit just before it commits, until the test lets it go.
    final class Gate: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        let armed = Atomic<Bool>(true)

        func pass() {
            if armed.exchange(false, ordering: .relaxed) { semaphore.wait() }
        }
    }

    /// Every change is handed to the worker as it is made (a threshold of one); the worker's
    /// first commit, the insert, is held until the store is gone.
    @Test func changesToANewObjectWhileItsInsertIsInFlightReachItsRow() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite")
        let gate = Gate()
        var configuration = Stores.configuration()
        configuration.pendingThreshold = 1
        configuration.faultBeforeCommit = {
            gate.pass()
            return nil
        }
        do {
            let store = try ModelStore(.file(path), models: [Tally.self], configuration: configuration)
            let tally = Tally(id: nil, label: "draft", count: 0)
            try store.insert(tally)
            try #require(store.pendingChanges.first?.isInFlight == true)
            tally.label = "final"
            try store.increment(\Tally.count, of: tally, by: 2)
            #expect(store.pendingChanges.map(\.description) == [
                "insert into tallies: id = NULL, label = 'draft', count = 0", "update tallies the new row: label = 'final'", "update tallies the new row: count += 2",
            ])
            // The store goes away here, not closed, while its insert is in flight.
        }
        gate.semaphore.signal()
        let stored = try Connection(filename: path, mode: .readWrite, busyTimeout: .seconds(5))
        try await settle {
            (try? stored.scalar("SELECT label || '/' || count FROM tallies")) == .text("final/2")
        }
    }
}
