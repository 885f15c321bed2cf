import Foundation
import PostgresTestSupport
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

    @Test @MainActor func usingAStoreOffItsActorTrapsNamingTheActor() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try await Stores.rows(1, at: .file(path)).close()
        let errors = Pipe()
        let process = Process()
        process.executableURL = Helper.builtExecutable("tracked-increment-helper")
        process.arguments = ["use-off-actor", path, "0"]
        process.standardError = errors
        try process.run()
        let message = String(decoding: await onThreadOfItsOwn { errors.fileHandleForReading.readDataToEndOfFile() }, as: UTF8.self)
        _ = await process.exitStatus()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(message.contains("ModelStore.count must be called on MainActor, the actor that opened the store"))
    }
}
