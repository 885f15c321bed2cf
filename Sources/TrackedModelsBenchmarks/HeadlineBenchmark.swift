public import Foundation
import Observation
import TrackedModels

/// The headline measurement: what one bump costs and whom it notifies, for TrackedModels with
/// per-row subscribers, the trap shape, Apple's `@Observable` with per-row tracking, and an
/// object-level baseline; plus flush throughput against a raw prepared-statement loop.
///
/// Every figure comes from the same run, so ratios hold on a noisy machine; each is the median
/// of several rounds.
///
/// ```swift
/// let report = try await HeadlineBenchmark(rows: 1_000).run(in: temporaryFolder)
/// print(report.table)
/// ```
@MainActor
public struct HeadlineBenchmark {
    public var rows: Int
    /// Bumps per round for the contenders that notify one subscriber.
    public var bumps = 20_000
    /// Rounds per figure; the median is reported.
    public var rounds = 5
    /// At most this many events per round for the contenders that notify everyone.
    public var eventBudget = 2_000_000
    /// Commits of the other process in the latency measurement.
    public var latencyCommits = 100
    /// Starts the other process of the latency measurement (see ``ExternalLatencyBenchmark``);
    /// without it, latency is not measured.
    public var startCommitter: ((_ path: String, _ commits: Int, _ gapMilliseconds: Int) throws -> (Process, Pipe))?

    public init(rows: Int) {
        self.rows = rows
    }

    /// Runs every measurement, with a database file in `folder`.
    public func run(in folder: String) async throws -> HeadlineReport {
        let database = TemporaryDatabase(in: folder, named: "headline")
        defer { database.remove() }
        let path = database.path
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        let store = try ModelStore(.file(path), models: [BenchmarkRow.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(rows)).map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let objects = try store.fetch(BenchmarkRow.self, orderBy: "id")
        let wideBumps = max(3, min(bumps, eventBudget / max(rows, 1)))

        let perRow = try await trackedPerRow(store, objects)
        let trap = try trackedTrap(store, objects, bumps: wideBumps)
        let observable = observablePerRow()
        let objectLevel = objectLevelBaseline(bumps: wideBumps)
        try await store.flush()
        let (flushRows, flushRate, rawRate) = try await flushAndRawThroughput(store, objects, path: path)
        let tracked = trackedAssignment(objects[0])
        let plain = observableAssignment()
        try await store.close()
        let withoutLog = try await flushThroughputWithoutLog(in: folder, rows: flushRows)
        var latency: ExternalLatencyBenchmark.Report?
        if let startCommitter {
            var benchmark = ExternalLatencyBenchmark()
            benchmark.commits = latencyCommits
            latency = try await benchmark.run(path: path, startCommitter: startCommitter)
        }
        return HeadlineReport(
            rows: rows, contenders: [perRow, trap, observable, objectLevel],
            flushRows: flushRows, flushRowsPerSecond: flushRate, flushWithoutLogRowsPerSecond: withoutLog,
            rawRowsPerSecond: rawRate, trackedAssignmentNs: tracked, observableAssignmentNs: plain, latency: latency
        )
    }

    // MARK: - Contenders

    private func trackedPerRow(_ store: ModelStore, _ objects: [BenchmarkRow]) async throws -> HeadlineReport.Contender {
        var events = 0
        var tokens = try objects.map { row in try store.subscribe(to: .object(row, \BenchmarkRow.count)) { _ in events += 1 } }
        tokens.append(try store.subscribe(to: .membership(BenchmarkRow.self)) { _ in events += 1 })
        // The bump loop runs with write-behind live (threshold flushes commit on the writer's
        // thread meanwhile); the flush that makes the round durable is timed on top of it.
        var sequence = RowSequence(rows: rows)
        var loop: [Double] = []
        var loopAndFlush: [Double] = []
        for _ in 0..<rounds {
            let start = ContinuousClock.now
            for _ in 0..<bumps { objects[sequence.next()].count += 1 }
            let bumped = ContinuousClock.now
            try await store.flush()
            let flushed = ContinuousClock.now
            loop.append((bumped - start).timeInterval * 1e9 / Double(bumps))
            loopAndFlush.append((flushed - start).timeInterval * 1e9 / Double(bumps))
        }
        tokens.forEach { $0.cancel() }
        return .init(
            name: "tracked-per-row", eventsPerBump: Double(events) / Double(bumps * rounds),
            nsPerBump: Figures.median(loop), bumps: bumps, nsPerBumpUntilDurable: Figures.median(loopAndFlush)
        )
    }

    private func trackedTrap(_ store: ModelStore, _ objects: [BenchmarkRow], bumps: Int) throws -> HeadlineReport.Contender {
        var events = 0
        let tokens = try objects.map { _ in try store.subscribe(to: .table(BenchmarkRow.self)) { _ in events += 1 } }
        let ns = measure(bumps: bumps) { sequence in
            for _ in 0..<bumps { objects[sequence.next()].count += 1 }
        }
        tokens.forEach { $0.cancel() }
        return .init(name: "tracked-trap", eventsPerBump: Double(events) / Double(bumps * rounds), nsPerBump: ns, bumps: bumps)
    }

    private func observablePerRow() -> HeadlineReport.Contender {
        let objects = (0..<Int64(rows)).map { ObservableRow(id: $0, title: "Row \($0)", count: 0) }
        let events = EventCounter()
        func track(_ row: ObservableRow) {
            withObservationTracking { _ = row.count } onChange: { events.increment() }
        }
        objects.forEach(track)
        let ns = measure(bumps: bumps) { sequence in
            for _ in 0..<bumps {
                let row = objects[sequence.next()]
                row.count += 1
                track(row)  // re-arm after each fire, as a view re-rendering would
            }
        }
        return .init(name: "observable-per-row", eventsPerBump: Double(events.value) / Double(bumps * rounds), nsPerBump: ns, bumps: bumps)
    }

    private func objectLevelBaseline(bumps: Int) -> HeadlineReport.Contender {
        let list = ObjectLevelList(rows: rows)
        var events = 0
        for _ in 0...rows { list.subscribe { events += 1 } }  // one per row, and the list's
        let ns = measure(bumps: bumps) { sequence in
            for _ in 0..<bumps { list.bump(sequence.next()) }
        }
        return .init(name: "object-level", eventsPerBump: Double(events) / Double(bumps * rounds), nsPerBump: ns, bumps: bumps)
    }

    // MARK: - Throughput

    /// Rows a flush round updates.
    private static func flushRows(of objects: [BenchmarkRow]) -> Int { min(objects.count, 100_000) }

    private func flushThroughput(_ store: ModelStore, _ objects: [BenchmarkRow]) async throws -> Double {
        var samples: [Double] = []
        for round in 0..<rounds { samples.append(try await flushRound(round, store, objects.prefix(Self.flushRows(of: objects)))) }
        return Figures.median(samples)
    }

    /// The flush and the raw loop over the same rows, a round of each in turn, so that a
    /// machine busy for a while slows both alike; each figure is the median of its rounds.
    private func flushAndRawThroughput(_ store: ModelStore, _ objects: [BenchmarkRow], path: String) async throws -> (rows: Int, flush: Double, raw: Double) {
        let count = Self.flushRows(of: objects)
        let connection = try Connection(filename: path, mode: .readWrite, busyTimeout: .seconds(5))
        try connection.execute("PRAGMA synchronous = NORMAL")
        let statement = try connection.makeStatement("UPDATE rows SET title = ? WHERE id = ?")
        var flushSamples: [Double] = []
        var rawSamples: [Double] = []
        for round in 0..<rounds {
            flushSamples.append(try await flushRound(round, store, objects.prefix(count)))
            // Values are made inside the clock, as the flush's are (by the assignments).
            let start = ContinuousClock.now
            try connection.withTransaction(.immediate) {
                for id in 0..<Int64(count) { try statement.run([.text("Row \(id) raw\(round)"), .integer(id)]) }
            }
            rawSamples.append(Double(count) / (ContinuousClock.now - start).timeInterval)
            // The store hears the raw loop's commit (another connection's) now, outside the
            // next flush round's clock.
            try await store.refreshExternalChanges()
        }
        return (count, Figures.median(flushSamples), Figures.median(rawSamples))
    }

    /// One round of assignments and their flush, in rows per second: from the first
    /// assignment to the acknowledgement (the pending threshold starts commits during the
    /// assignments, and they belong to the figure).
    private func flushRound(_ round: Int, _ store: ModelStore, _ objects: ArraySlice<BenchmarkRow>) async throws -> Double {
        try await store.flush()
        let start = ContinuousClock.now
        for row in objects { row.title = "Row \(row.id) v\(round)" }
        try await store.flush()
        return Double(objects.count) / (ContinuousClock.now - start).timeInterval
    }

    /// The same flush on a store that keeps no change log (no triggers on its file).
    private func flushThroughputWithoutLog(in folder: String, rows count: Int) async throws -> Double {
        let database = TemporaryDatabase(in: folder, named: "nolog")
        defer { database.remove() }
        let path = database.path
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        configuration.observesExternalChanges = false
        let store = try ModelStore(.file(path), models: [BenchmarkRow.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(count)).map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let objects = try store.fetch(BenchmarkRow.self, orderBy: "id")
        let rate = try await flushThroughput(store, objects)
        try await store.close()
        return rate
    }

    private func trackedAssignment(_ row: BenchmarkRow) -> Double {
        measure(bumps: bumps * 10) { _ in
            for value in 0..<Int64(bumps * 10) { row.count = value }
        }
    }

    private func observableAssignment() -> Double {
        let row = ObservableRow(id: 0, title: "Row 0", count: 0)
        return measure(bumps: bumps * 10) { _ in
            for value in 0..<Int64(bumps * 10) { row.count = value }
        }
    }

    // MARK: - Timing

    private func measure(bumps: Int, _ body: (inout RowSequence) -> Void) -> Double {
        var sequence = RowSequence(rows: rows)
        let samples = (0..<rounds).map { _ in
            let start = ContinuousClock.now
            body(&sequence)
            return (ContinuousClock.now - start).timeInterval * 1e9 / Double(bumps)
        }
        return Figures.median(samples)
    }
}
