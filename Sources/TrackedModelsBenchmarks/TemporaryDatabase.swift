import Foundation
import TrackedModels

/// A database file of one benchmark in a folder, removed with its `-wal` and `-shm` files.
///
/// ```swift
/// let database = TemporaryDatabase(in: folder, named: "live")
/// defer { database.remove() }
/// ```
struct TemporaryDatabase {
    let path: String

    init(in folder: String, named name: String) {
        path = URL(fileURLWithPath: folder).appendingPathComponent("bench-\(name)-\(UUID().uuidString).sqlite").path
    }

    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

extension TemporaryDatabase {
    /// A store on this file holding `rows` demo rows (counts `id % 100`), flushed, and their
    /// objects in key order.
    @MainActor
    func demoStore(rows: Int) async throws -> (store: ModelStore, objects: [BenchmarkRow]) {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.file(path), models: [BenchmarkRow.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(rows)).lazy.map { BenchmarkRow(id: $0, title: "Row \($0)", count: $0 % 100) })
        try await store.flush()
        return (store, try store.fetch(BenchmarkRow.self, orderBy: "id"))
    }
}
