// This target is built with default MainActor isolation (SE-0466): every declaration here,
// the model included, is implicitly @MainActor, and so is its conformance to TrackedModel.
import Foundation
import Testing
import TrackedModels

@Tracked(table: "tasks")
final class TaskItem {
    @PrimaryKey var id: Int64
    var title: String
    var isDone: Bool = false
}

@Suite struct DefaultIsolationTests {
    @Test func aModelInADefaultMainActorTargetIsStoredAndObserved() async throws {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.inMemory, models: [TaskItem.self], configuration: configuration)
        let item = TaskItem(id: 1, title: "write the test")
        try store.insert(item)
        var heard: [ChangeEvent] = []
        let token = try store.subscribe(to: .row(1, \TaskItem.isDone)) { heard.append($0) }
        item.isDone = true
        try await store.flush()
        #expect(heard.count == 1)
        #expect(try store.count(TaskItem.self, where: "isDone = 1") == 1)
        #expect(try store.find(TaskItem.self, key: 1) === item)
        token.cancel()
        try await store.close()
    }
}
