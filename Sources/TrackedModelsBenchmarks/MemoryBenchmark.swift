import Foundation
import TrackedModels
#if canImport(Glibc)
import Glibc
#endif

/// What a store's memory does when it hands out many objects and the program drops them: the
/// identity map holds clean objects weakly, so the resident set returns close to where it was.
///
/// ```swift
/// let report = try await MemoryBenchmark(rows: 1_000_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct MemoryBenchmark {
    public struct Report: Sendable {
        public var rows: Int
        /// Resident set with the store open and no objects fetched.
        public var baselineMegabytes: Double
        /// Resident set while the program holds every fetched object.
        public var fetchedMegabytes: Double
        /// Resident set after the program dropped them.
        public var droppedMegabytes: Double

        public var table: String {
            "memory over \(rows) rows: RSS \(format(baselineMegabytes)) MB open, \(format(fetchedMegabytes)) MB holding every object, "
                + "\(format(droppedMegabytes)) MB after dropping them (\(format(droppedMegabytes - baselineMegabytes)) MB above the baseline)"
        }

        public var json: String {
            "{\"rows\": \(rows), \"baseline_mb\": \(format(baselineMegabytes)), \"fetched_mb\": \(format(fetchedMegabytes)), \"dropped_mb\": \(format(droppedMegabytes))}"
        }

        private func format(_ value: Double) -> String {
            String((value * 10).rounded() / 10)
        }
    }

    public var rows: Int

    public init(rows: Int) {
        self.rows = rows
    }

    /// Fills a file in `folder`, then measures: open, fetch every row, drop the objects.
    public func run(in folder: String) async throws -> Report {
        let database = TemporaryDatabase(in: folder, named: "memory")
        defer { database.remove() }
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        do {
            let seeding = try ModelStore(.file(database.path), models: [BenchmarkRow.self], configuration: configuration)
            try seeding.insert(contentsOf: (0..<Int64(rows)).lazy.map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
            try await seeding.close()
        }
        let store = try ModelStore(.file(database.path), models: [BenchmarkRow.self], configuration: configuration)
        let baseline = Self.residentMegabytes()
        var fetched = 0
        var holding = 0.0
        do {
            let objects = try store.fetch(BenchmarkRow.self)
            fetched = objects.count
            // Explicitly alive while measured: an optimized build may release an array right
            // after its last use.
            withExtendedLifetime(objects) { holding = Self.residentMegabytes() }
        }
        let dropped = Self.residentMegabytes()
        try await store.close()
        precondition(fetched == rows, "fetched \(fetched) of \(rows) rows")
        return Report(rows: rows, baselineMegabytes: baseline, fetchedMegabytes: holding, droppedMegabytes: dropped)
    }

    /// The resident set size, after handing free heap pages back to the system (so that the
    /// figure shows what is live, not what the allocator keeps for later).
    static func residentMegabytes() -> Double {
        #if canImport(Glibc)
        // glibc's malloc_trim (malloc.h, which the Glibc module does not export).
        typealias MallocTrim = @convention(c) (Int) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        }
        #endif
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return .nan }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}
