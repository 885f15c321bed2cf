import Foundation
import TrackedModels

/// `bulkInsert(contentsOf:)` against a raw prepared INSERT loop in one transaction, each on a
/// fresh file, alternated round by round.
///
/// The library's clock runs from the call to its return (committed), objects made inside it by
/// a lazy sequence. The raw loops make their values inside the clock too, and run twice: into
/// the same table with the store's change-log triggers (the database work is then the same)
/// and into a plain table without them (what plain SQLite code gets).
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
        /// The raw loop into the store's table, change-log triggers firing.
        public var rawWithLogRowsPerSecond: Double
        /// The raw loop into a plain table.
        public var rawRowsPerSecond: Double

        public var table: String {
            "bulk insert of \(rows) rows in one transaction: \(Figures.format(bulkRowsPerSecond)) rows/s; raw prepared INSERT loop: "
                + "\(Figures.format(rawWithLogRowsPerSecond)) rows/s into the same table with its change log "
                + "(ratio \(Figures.format(bulkRowsPerSecond / rawWithLogRowsPerSecond, digits: 2))), "
                + "\(Figures.format(rawRowsPerSecond)) rows/s into a plain table (ratio \(Figures.format(bulkRowsPerSecond / rawRowsPerSecond, digits: 2)))"
        }

        public var json: String {
            "{\"rows\": \(rows), \"bulk_rows_per_second\": \(Figures.format(bulkRowsPerSecond)), "
                + "\"raw_with_log_rows_per_second\": \(Figures.format(rawWithLogRowsPerSecond)), \"raw_rows_per_second\": \(Figures.format(rawRowsPerSecond))}"
        }
    }

    public var rows: Int
    public var rounds = 3

    public init(rows: Int) {
        self.rows = rows
    }

    public func run(in folder: String) async throws -> Report {
        var bulk: [Double] = []
        var rawWithLog: [Double] = []
        var raw: [Double] = []
        for _ in 0..<rounds {
            bulk.append(try await bulkInsert(in: folder))
            rawWithLog.append(try await rawInsert(in: folder, withChangeLog: true))
            raw.append(try await rawInsert(in: folder, withChangeLog: false))
        }
        return Report(
            rows: rows, bulkRowsPerSecond: Figures.median(bulk),
            rawWithLogRowsPerSecond: Figures.median(rawWithLog), rawRowsPerSecond: Figures.median(raw)
        )
    }

    private func newStore(_ database: TemporaryDatabase, observing: Bool = true) throws -> ModelStore {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        configuration.observesExternalChanges = observing
        return try ModelStore(.file(database.path), models: [BenchmarkRow.self], configuration: configuration)
    }

    private func bulkInsert(in folder: String) async throws -> Double {
        let database = TemporaryDatabase(in: folder, named: "bulk")
        defer { database.remove() }
        let store = try newStore(database)
        let count = rows
        let start = ContinuousClock.now
        try await store.bulkInsert(contentsOf: (0..<Int64(count)).lazy.map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
        let elapsed = ContinuousClock.now - start
        try await store.close()
        return Double(count) / elapsed.timeInterval
    }

    /// The table made by a store (with its change-log triggers, or without any), then filled by
    /// a raw loop on a connection of its own.
    private func rawInsert(in folder: String, withChangeLog: Bool) async throws -> Double {
        let database = TemporaryDatabase(in: folder, named: withChangeLog ? "rawlog" : "raw")
        defer { database.remove() }
        try await newStore(database, observing: withChangeLog).close()
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
