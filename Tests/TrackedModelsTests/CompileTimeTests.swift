import Foundation
import Observation
import Testing
public import TrackedModels

// Declarations that must simply compile: access levels (a public model needs the module
// imported publicly under InternalImportsByDefault), initializers of one's own, renamed
// columns, ignored properties.

@Tracked(table: "public_notes")
public final class PublicNote {
    @PrimaryKey public var id: Int64?
    @Column("body_text") public var body: String
    public var pinned: Bool = false
    @ObservationIgnored var cachedLength = 0
    @Transient public var draft: String? = nil

    public init(body: String) {
        self.body = body
    }
}

@Tracked(table: "counters")
final class Counter {
    @PrimaryKey var name: String
    var value: Int32
    var updatedAt: Date?
    static let defaultName = "main"
    var doubled: Int32 { value * 2 }
}

/// A model isolated to the main actor: its conformance is a main-actor isolated one.
@MainActor
@Tracked(table: "screens")
final class Screen {
    @PrimaryKey var id: Int64
    var name: String
}

@MainActor
@Suite struct CompileTimeTests {
    @Test func aMainActorModelIsStoredAndObserved() async throws {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.inMemory, models: [Screen.self], configuration: configuration)
        let screen = Screen(id: 1, name: "home")
        try store.insert(screen)
        var heard = 0
        let token = try store.subscribe(to: .row(1, \Screen.name)) { _ in heard += 1 }
        screen.name = "settings"
        try await store.flush()
        #expect(heard == 1)
        #expect(try store.count(Screen.self, where: "name = 'settings'") == 1)
        token.cancel()
    }

    @Test func keysAreTypedByTheModel() async throws {
        let store = try await Stores.rows(3)
        // `key:` is Row.PrimaryKeyValue (Int64): a literal infers it, a String would not compile.
        let row: Row? = try store.find(Row.self, key: 2)
        #expect(row?.id == 2)
        #expect(Row.PrimaryKeyValue.self == Int64.self)
        #expect(PublicNote.PrimaryKeyValue.self == Int64.self)   // from Int64?
        #expect(Counter.PrimaryKeyValue.self == String.self)
    }

    @Test func ownInitializersRenamedColumnsAndTextKeysWork() async throws {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.inMemory, models: [PublicNote.self, Counter.self], configuration: configuration)
        let note = PublicNote(body: "hello")
        note.cachedLength = 5
        try store.insert(note)
        #expect(try await store.committedKey(of: note) == 1)
        #expect(note.id == 1)
        #expect(PublicNote._$schema.columns.map(\.name) == ["id", "body_text", "pinned"])
        let counter = Counter(name: Counter.defaultName, value: 2)
        try store.insert(counter)
        try store.increment(\Counter.value, of: counter, by: 3)
        try await store.flush()
        #expect(counter.doubled == 10)
        #expect(try store.find(Counter.self, key: "main") === counter)
        #expect(try store.count(PublicNote.self, where: "body_text = ?", ["hello"]) == 1)
    }

    @Test func observationsSeesTrackedProperties() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        let counts = Observations { row.count }
        var iterator = counts.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        row.count = 7
        #expect(await iterator.next() == 7)
    }
}
