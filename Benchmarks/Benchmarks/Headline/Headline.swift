import Benchmark
import Foundation
import Observation
import TrackedModels

// The headline scenarios of `modelctl bench` (Sources/TrackedModelsBenchmarks), on
// package-benchmark: the same work, with allocation counts and percentiles added.

@Tracked(table: "rows")
final class Row {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int64
}

@Observable
final class PlainRow {
    var count: Int64 = 0
}

/// A store of `rows` rows in a temporary file (counts `id % 100`), with its objects.
@MainActor
func makeStore(rows: Int) async throws -> (ModelStore, [Row]) {
    var configuration = ModelStore.Configuration()
    configuration.createsMissingTables = true
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("headline-\(UUID().uuidString).sqlite").path
    let store = try ModelStore(.file(path), models: [Row.self], configuration: configuration)
    try store.insert(contentsOf: (0..<Int64(rows)).map { Row(id: $0, title: "Row \($0)", count: $0 % 100) })
    try await store.flush()
    return (store, try store.fetch(Row.self, orderBy: "id"))
}

@MainActor
func trackedAssignment(_ benchmark: Benchmark) async throws {
    let (store, rows) = try await makeStore(rows: 1)
    benchmark.startMeasurement()
    for iteration in benchmark.scaledIterations { rows[0].count = Int64(iteration) }
    benchmark.stopMeasurement()
    try await store.close()
}

@MainActor
func liveListBumps(_ benchmark: Benchmark, rows: Int) async throws {
    let (store, objects) = try await makeStore(rows: rows)
    let list = try store.results(for: FetchDescriptor<Row>(
        predicate: #Predicate { $0.count > 0 },
        sortBy: [SortDescriptor(\.count, order: .reverse)]
    ))
    var generator = SystemRandomNumberGenerator()
    let picks = benchmark.scaledIterations.map { _ in Int.random(in: 0..<rows, using: &generator) }
    benchmark.startMeasurement()
    for pick in picks { objects[pick].count += 1 }
    benchmark.stopMeasurement()
    withExtendedLifetime(list) {}
    try await store.close()
}

let benchmarks: @Sendable () -> Void = {
    // 1,000 operations a sample: the figures (marked *) are per operation; store set-up is
    // outside the measurement (startMeasurement/stopMeasurement).
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .instructions],
        scalingFactor: .kilo,
        maxDuration: .seconds(5)
    )

    Benchmark("assignment: @Observable") { benchmark in
        let row = PlainRow()
        for iteration in benchmark.scaledIterations { row.count = Int64(iteration) }
    }
    Benchmark("assignment: tracked, nobody subscribed") { benchmark in
        // Handed to the main actor, where the store lives: only that awaited call uses it.
        nonisolated(unsafe) let benchmark = benchmark
        try await trackedAssignment(benchmark)
    }
    for rows in [1_000, 100_000] {
        Benchmark("live list bump, \(rows) rows") { benchmark in
            nonisolated(unsafe) let benchmark = benchmark
            try await liveListBumps(benchmark, rows: rows)
        }
    }
}
