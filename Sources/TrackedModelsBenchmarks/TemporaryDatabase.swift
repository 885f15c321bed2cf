import Foundation

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
