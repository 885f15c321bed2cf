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

@MainActor
@Suite struct CompileTimeTests {
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
