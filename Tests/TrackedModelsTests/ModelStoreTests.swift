import Foundation
import Testing
@testable import TrackedModels

@MainActor
@Suite struct ModelStoreTests {
    @Test func identityMapHandsOutOneObjectPerRow() async throws {
        let store = try await Stores.rows(10)
        let all = try store.fetch(Row.self, orderBy: "id")
        let filtered = try store.fetch(Row.self, where: "id = ?", [3])
        let found = try #require(try store.find(Row.self, key: Int64(3)))
        #expect(all.count == 10)
        #expect(all[3] === filtered[0])
        #expect(all[3] === found)
    }

    @Test func fetchFiltersOrdersAndLimits() async throws {
        let store = try await Stores.rows(20)
        let rows = try store.fetch(Row.self, where: "id >= ? AND id < ?", [5, 15], orderBy: "id DESC", limit: 3)
        #expect(rows.map(\.id) == [14, 13, 12])
        #expect(try store.count(Row.self) == 20)
        #expect(try store.count(Row.self, where: "id < ?", [5]) == 5)
        #expect(try store.find(Row.self, key: Int64(99)) == nil)
    }

    @Test func insertAssignsTheKeyWhenItIsNil() async throws {
        let store = try ModelStore(.inMemory, models: [Sample.self], configuration: Stores.configuration())
        let first = Sample(flag: true, int: 1, int64: 1, int32: 1, double: 1, string: "", data: Data(), date: Date(), uuid: UUID(), priority: .low, mood: .calm)
        let second = Sample(flag: true, int: 2, int64: 2, int32: 2, double: 2, string: "", data: Data(), date: Date(), uuid: UUID(), priority: .low, mood: .calm)
        try store.insert(contentsOf: [first, second])
        #expect(first.id == nil)
        try await store.flush()
        #expect(first.id == 1)
        #expect(second.id == 2)
        #expect(try store.find(Sample.self, key: Int64(2)) === second)
    }

    @Test func aDuplicateKeyIsRefusedAndCanBeDiscarded() async throws {
        let store = try await Stores.rows(3)
        // An object of this store has the key: refused at once.
        let existing = try #require(try store.find(Row.self, key: 1))
        #expect(throws: StoreError.self) { try store.insert(Row(id: 1, title: "duplicate", count: 0)) }
        #expect(!store.hasPendingChanges)
        // Only the file has the key: the database refuses it at flush, and it stays pending.
        let duplicate = Row(id: 2, title: "duplicate", count: 0)
        try store.insert(duplicate)
        do {
            try await store.flush()
            Issue.record("a duplicate key was inserted")
        } catch let error as StoreError where error.code == .changeRejected {
            #expect((error.underlying as? StoreError)?.code == .constraintRefused)
            #expect(error.constraint == .primaryKey)
        }
        let stuck = try #require(store.pendingChanges.first)
        try store.discard(stuck)
        #expect(!store.hasPendingChanges)
        #expect(try store.find(Row.self, key: 2) !== duplicate)
        #expect(try store.count(Row.self) == 3)
        try store.insert(Row(id: 3, title: "Row 3", count: 0))
        try await store.flush()
        #expect(try store.count(Row.self) == 4)
        #expect(existing.title == "Row 1")
    }

    @Test func schemaMismatchListsEveryDifference() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try Peek(path).execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title BLOB NOT NULL, extra TEXT)")
        #expect {
            _ = try ModelStore(.file(path), models: [Row.self, Sample.self], configuration: Stores.configuration(createTables: false))
        } throws: { error in
            guard let error = error as? StoreError, error.code == .schemaMismatch else { return false }
            let text = error.differences.map(\.description)
            return error.differences.count == 3
                && text.contains { $0.hasPrefix("rows.title: declared BLOB") }
                && text.contains { $0.hasPrefix("rows.count: column is missing") }
                && text.contains { $0.hasPrefix("samples: table is missing") }
        }
    }

    @Test func nullableColumnForANonOptionalPropertyIsADifference() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try Peek(path).execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT, count INTEGER NOT NULL)")
        #expect {
            _ = try ModelStore(.file(path), models: [Row.self], configuration: Stores.configuration(createTables: false))
        } throws: { error in
            (error as? StoreError)?.differences.map(\.description) == [
                "rows.title: allows NULL but title is not optional; declare the column NOT NULL or make the property optional",
            ]
        }
    }

    @Test func deleteRemovesTheRowAndDetachesTheObject() async throws {
        let store = try await Stores.rows(3)
        let row = try #require(try store.find(Row.self, key: Int64(1)))
        try store.delete(row)
        row.count = 5  // detached: not stored
        try await store.flush()
        #expect(try store.count(Row.self) == 2)
        #expect(try store.find(Row.self, key: Int64(1)) == nil)
        #expect(throws: StoreError.self) { try store.delete(row) }
    }

    @Test func closedStoreRefusesWork() async throws {
        let store = try await Stores.rows(1)
        try await store.close()
        #expect(throws: StoreError.self) { try store.fetch(Row.self) }
        await #expect(throws: StoreError.self) { try await store.flush() }
    }

    @Test func fileNamesAreNeverURIs() async throws {
        let name = "file:odd.sqlite?mode=memory"
        let cwd = FileManager.default.currentDirectoryPath
        #expect(Connection.absoluteFilename(name) == URL(fileURLWithPath: cwd).appendingPathComponent(name).path)
        let directory = try TemporaryDirectory()
        let store = try ModelStore(.file(directory.path(name)), models: [Row.self], configuration: Stores.configuration())
        try store.insert(Row(id: 1, title: "x", count: 0))
        try await store.close()
        #expect(FileManager.default.fileExists(atPath: directory.path(name)))
    }
}
