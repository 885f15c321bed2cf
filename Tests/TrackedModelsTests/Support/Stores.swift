import Foundation
@testable import TrackedModels

/// Opens stores for tests: a fresh file in a temporary directory, or memory.
@MainActor
enum Stores {
    static func configuration(createTables: Bool = true) -> ModelStore.Configuration {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = createTables
        // Long enough that no test sees an interval flush it did not ask for: 30 seconds was
        // not, on a machine loaded enough that one test took 88 (its pending changes then
        // committed before the flush it was checking).
        configuration.flushInterval = .seconds(3_600)
        configuration.pendingThreshold = 1_000_000
        return configuration
    }

    /// A store on a new database of an engine holding rows 0..<count, and the database's path
    /// or URL (for ``TestEngine/sql(_:_:)``, another process).
    ///
    /// - Parameter refusingCountsFrom: Makes the table first, with a CHECK that refuses a
    ///   count of this or more.
    static func rows(
        _ count: Int, on engine: TestEngine, in directory: TemporaryDirectory, refusingCountsFrom limit: Int? = nil,
        configuration: ModelStore.Configuration = configuration()
    ) async throws -> (store: ModelStore, database: String) {
        let database = try await engine.makeDatabase(in: directory)
        if let limit {
            let integer = engine == .sqlite ? "INTEGER" : "BIGINT"
            try await engine.sql(database, "CREATE TABLE rows (id \(integer) PRIMARY KEY, title TEXT NOT NULL, count \(integer) NOT NULL CHECK (count < \(limit)))")
        }
        let store = try await engine.open(database, configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(count)).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        return (store, database)
    }

    static func rows(_ count: Int, at location: DatabaseLocation = .inMemory, configuration: ModelStore.Configuration = configuration()) async throws -> ModelStore {
        let store = try ModelStore(location, models: [Row.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(count)).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        return store
    }
}

/// A second connection to a store's file, to read what is committed.
final class Peek {
    private let connection: Connection

    init(_ path: String) throws {
        connection = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
    }

    func value(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue {
        try connection.scalar(sql, arguments)
    }

    func execute(_ sql: String) throws {
        try connection.execute(sql)
    }

    func rows(_ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try connection.makeStatement(sql).rows(arguments)
    }
}
