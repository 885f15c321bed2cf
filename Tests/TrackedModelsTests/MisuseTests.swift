import Testing
import TrackedModels

/// Programmer errors trap with a message instead of corrupting the store.
@Suite struct MisuseTests {
    @MainActor static func changePrimaryKeyOfAStoredObject() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        row.id = 99
    }

    static func openAStoreOffAnActor() throws {
        _ = try ModelStore(.inMemory, models: [Row.self], isolation: nil)
    }

    @MainActor static func deleteAllInATransaction() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        try store.transaction { try store.deleteAll(Row.self) }
        _ = row
    }

    @Test func changingAStoredObjectsPrimaryKeyTraps() async {
        await #expect(processExitsWith: .failure) {
            try await MisuseTests.changePrimaryKeyOfAStoredObject()
        }
    }

    @Test func openingAStoreOutsideAnActorTraps() async {
        await #expect(processExitsWith: .failure) {
            try MisuseTests.openAStoreOffAnActor()
        }
    }

    @Test func deletingEverythingInsideATransactionTraps() async {
        await #expect(processExitsWith: .failure) {
            try await MisuseTests.deleteAllInATransaction()
        }
    }
}
