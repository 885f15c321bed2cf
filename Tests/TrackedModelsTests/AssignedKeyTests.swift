import Foundation
import Synchronization
import Testing
@testable import TrackedModels

/// Keys the database assigns: a new object's changes, and links to it, reach the file in the
/// commits that write them, whatever commits first, fails, is refused or discarded, and
/// whatever a handler does while the keys are given out. Found in review of the placeholders.
@MainActor
@Suite struct AssignedKeyTests {
    @Tracked(table: "notes_checked")
    final class CheckedNote {
        @PrimaryKey var id: Int64?
        var title: String
        var count: Int
    }

    /// A store over a file whose notes refuse a negative count, handing every change to the
    /// worker as it is made (a threshold of one) when `eager`.
    func store(in directory: TemporaryDirectory, eager: Bool = false, models: [any TrackedModel.Type] = [CheckedNote.self]) throws -> (ModelStore, String) {
        let path = directory.path("db.sqlite")
        let connection = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
        try connection.execute("CREATE TABLE notes_checked (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL CHECK (count >= 0))")
        var configuration = Stores.configuration()
        if eager { configuration.pendingThreshold = 1 }
        return (try ModelStore(.file(path), models: models, configuration: configuration), path)
    }

    func file(_ path: String, _ sql: String) throws -> SQLValue {
        try Connection(filename: path, mode: .readWrite, busyTimeout: .seconds(5)).scalar(sql)
    }

    /// A handler that hears the first list's insert renames the second, whose key the same
    /// commit gave: the rename is a change of its keyed row.
    @Test func aHandlerWritingToAnObjectOfTheSameCommitFindsItKeyed() async throws {
        let directory = try TemporaryDirectory()
        let store = try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
        let first = TodoList(id: nil, title: "A"), second = TodoList(id: nil, title: "B")
        let token = try store.subscribe(to: .table(TodoList.self)) { event in
            if event.kind == .insert, event.key == first.id.map({ .integer($0) }) ?? .null { second.title = "renamed" }
        }
        try store.insert(first)
        try store.insert(second)
        try await store.flush()
        try await store.flush()
        #expect(second.title == "renamed")
        #expect(store.pendingChanges.isEmpty)
        let key = try #require(second.id)
        #expect(try file(directory.path("db.sqlite"), "SELECT title FROM lists WHERE id = \(key)") == "renamed")
        token.cancel()
        try await store.close()
    }

    /// An insert refused while a change made to its object in flight waits behind it: the
    /// fix that follows wins, in the file as in the object.
    @Test func aFixAfterARefusedInsertWinsOverAChangeMadeWhileItWasInFlight() async throws {
        let directory = try TemporaryDirectory()
        let (store, path) = try store(in: directory, eager: true)
        let note = CheckedNote(id: nil, title: "a", count: -1)
        try store.insert(note)
        note.title = "b"
        await #expect(throws: StoreError.self) { try await store.flush() }
        note.count = 0
        note.title = "c"
        try await store.flush()
        #expect(note.title == "c")
        let key = try #require(note.id)
        #expect(try file(path, "SELECT title || '/' || count FROM notes_checked WHERE id = \(key)") == "c/0")
        try await store.close()
    }

    /// Objects that point at each other, inserted while every change is handed over at once:
    /// both rows are linked (the insert and what it inserts with it go together).
    @Test func aCycleInsertedWithAThresholdOfOneIsLinkedBothWays() async throws {
        let directory = try TemporaryDirectory()
        var configuration = Stores.configuration()
        configuration.pendingThreshold = 1
        let path = directory.path("db.sqlite")
        let store = try ModelStore(.file(path), models: [TodoList.self, Entry.self], configuration: configuration)
        let first = Entry(id: nil, title: "first"), second = Entry(id: nil, title: "second")
        first.parent = second
        second.parent = first
        try store.insert(first)
        try await store.flush()
        let (a, b) = try (#require(first.id), #require(second.id))
        #expect(try file(path, "SELECT parent_entry FROM entries WHERE id = \(a)") == .integer(b))
        #expect(try file(path, "SELECT parent_entry FROM entries WHERE id = \(b)") == .integer(a))
        try await store.close()
    }

    /// Discarding a change made to a new object while its insert was in flight (the insert was
    /// refused, so both stay pending) shows the object as its insert has it again.
    @Test func discardingAChangeMadeWhileTheInsertWasInFlightShowsTheInsert() async throws {
        let directory = try TemporaryDirectory()
        let (store, path) = try store(in: directory, eager: true)
        let note = CheckedNote(id: nil, title: "a", count: -1)
        try store.insert(note)
        note.title = "x"
        await #expect(throws: StoreError.self) { try await store.flush() }
        let change = try #require(store.pendingChanges.last)
        #expect(change.description == "update notes_checked the new row: title = 'x'")
        try store.discard(change)
        #expect(note.title == "a")
        note.count = 2
        try await store.flush()
        let key = try #require(note.id)
        #expect(try file(path, "SELECT title || '/' || count FROM notes_checked WHERE id = \(key)") == "a/2")
        try await store.close()
    }
}
