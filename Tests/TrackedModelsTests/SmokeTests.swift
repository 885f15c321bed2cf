import Testing
import TrackedModels

@MainActor
@Suite struct SmokeTests {
    @Test func insertFetchBump() async throws {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.inMemory, models: [Row.self], configuration: configuration)
        try await store.insert(Row(id: 1, title: "Row 1", count: 0))
        let row = try #require(try store.find(Row.self, key: Int64(1)))
        row.count += 1
        try await store.flush()
        #expect(store.writerStatistics.rowStatements == 2)
    }
}
