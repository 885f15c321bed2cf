import Foundation
import TrackedModels

/// `bulkInsert(contentsOf:)` against a raw prepared INSERT loop in one transaction, each into a
/// fresh file, alternated round by round.
///
/// The library's clock runs from the call to its return (committed), the objects made inside
/// it by a lazy sequence. The raw loop makes its values inside its clock too, and inserts into
/// the same table (made by a store that keeps no change log) on a connection of its own.
///
/// ```swift
/// let report = try await BulkInsertBenchmark(rows: 1_000_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct BulkInsertBenchmark {
    public struct Report: Sendable {
        public var rows: Int
        public var bulkRowsPerSecond: Double
        public var rawRowsPerSecond: Double

        public var table: String {
            "bulk insert of \(rows) rows in one transaction: \(Figures.format(bulkRowsPerSecond)) rows/s; raw prepared INSERT loop: "
                + "\(Figures.format(rawRowsPerSecond)) rows/s (ratio \(Figures.format(bulkRowsPerSecond / rawRowsPerSecond, digits: 2)))"
        }

        public var json: String {
            "{\"rows\": \(rows), \"bulk_rows_per_second\": \(Figures.format(bulkRowsPerSecond)), \"raw_rows_per_second\": \(Figures.format(rawRowsPerSecond))}"
        }
    }

    public var rows: Int
    public var rounds = 5

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        var bulk: [Double] = []
        var raw: [Double] = []
        for _ in 0..<rounds {
            bulk.append(try await bulkInsert(in: folder))
            raw.append(try await rawInsert(in: folder))
        }
        return Report(rows: rows, bulkRowsPerSecond: Figures.median(bulk), rawRowsPerSecond: Figures.median(raw))
    }

    private func newStore(_ database: TemporaryDatabase, keepingChangeLog: Bool) throws -> ModelStore {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        configuration.observesExternalChanges = keepingChangeLog
        return try ModelStore(.file(database.path), models: [BenchmarkRow.self], configuration: configuration)
    }

    private func bulkInsert(in folder: String) async throws -> Double {
        let database = TemporaryDatabase(in: folder, named: "bulk")
        defer { database.remove() }
        let store = try newStore(database, keepingChangeLog: true)
        let count = rows
        let start = ContinuousClock.now
        try await store.bulkInsert(contentsOf: (0..<Int64(count)).lazy.map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
        let elapsed = ContinuousClock.now - start
        try await store.close()
        return Double(count) / elapsed.timeInterval
    }

    private func rawInsert(in folder: String) async throws -> Double {
        let database = TemporaryDatabase(in: folder, named: "raw")
        defer { database.remove() }
        try await newStore(database, keepingChangeLog: false).close()
        let connection = try Connection(filename: database.path, mode: .readWrite, busyTimeout: .seconds(5))
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = NORMAL")
        let statement = try connection.makeStatement("INSERT INTO rows (id, title, count) VALUES (?, ?, ?)")
        let start = ContinuousClock.now
        try connection.withTransaction(.immediate) {
            for id in 0..<Int64(rows) { try statement.run([.integer(id), .text("Row \(id)"), .integer(0)]) }
        }
        return Double(rows) / (ContinuousClock.now - start).timeInterval
    }
}
