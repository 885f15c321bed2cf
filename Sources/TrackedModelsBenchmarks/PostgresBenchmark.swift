public import Foundation
import Logging
import NIOPosix
import PostgresNIO
import TrackedModels

/// The PostgreSQL figures, in a database of its own on the given server (made, then dropped):
/// commit-to-event latency between two processes through the server, and flush throughput
/// against a raw postgres-nio `UPDATE` loop in one transaction, measured in the same run.
@MainActor
public struct PostgresBenchmark {
    /// The server, as a URL whose user may create databases.
    public var serverURL: String
    /// Rows each flush (and each raw transaction) updates.
    public var rows = 10_000
    /// Commits of the other process in the latency measurement.
    public var commits = 200
    /// Rounds of each throughput measurement; the median is reported.
    public var rounds = 5
    /// The fan-out measurement, when asked for (`--watchers N`), with how it starts its processes.
    public var fanout: (benchmark: FanoutBenchmark, startWatcher: (String) throws -> FanoutBenchmark.Started,
                        startWriter: (FanoutWriter.Plan) throws -> FanoutBenchmark.Started)?

    public init(serverURL: String) {
        self.serverURL = serverURL
    }

    public struct Report: Sendable {
        public var rows: Int
        public var flushRowsPerSecond: Double
        public var rawRowsPerSecond: Double
        public var latency: ExternalLatencyBenchmark.Report
        public var fanout: FanoutBenchmark.Report?

        public var table: String {
            """
            PostgreSQL (\(rows) rows per flush, medians)
              flush                      \(Int(flushRowsPerSecond)) rows/s
              raw postgres-nio UPDATEs   \(Int(rawRowsPerSecond)) rows/s (flush = \(String(format: "%.0f", 100 * flushRowsPerSecond / rawRowsPerSecond))% of it)
              commit → event (\(latency.commits) commits, another process)
                median \(String(format: "%.2f", latency.medianMilliseconds)) ms, p99 \(String(format: "%.2f", latency.p99Milliseconds)) ms (from before the bump)
                median \(String(format: "%.2f", latency.lowerBoundMedianMilliseconds)) ms, p99 \(String(format: "%.2f", latency.lowerBoundP99Milliseconds)) ms (from the committer's flush returning)
                events per commit \(String(format: "%.2f", latency.eventsPerCommit))
              a bare LISTEN hearing the same commits (\(latency.floor.map { "\($0.commits)" } ?? "none"))
                median \(Self.milliseconds(latency.floor?.medianMilliseconds)) ms, p99 \(Self.milliseconds(latency.floor?.p99Milliseconds)) ms (from before the bump)
                median \(Self.milliseconds(latency.floor?.lowerBoundMedianMilliseconds)) ms, p99 \(Self.milliseconds(latency.floor?.lowerBoundP99Milliseconds)) ms (from the committer's flush returning)
            """ + (fanout.map { "\n" + $0.table } ?? "")
        }

        public var json: String {
            "{\"rows\": \(rows), \"flush_rows_per_second\": \(flushRowsPerSecond), \"raw_rows_per_second\": \(rawRowsPerSecond), "
                + "\"latency_median_ms\": \(latency.medianMilliseconds), \"latency_p99_ms\": \(latency.p99Milliseconds), "
                + "\"latency_lower_median_ms\": \(latency.lowerBoundMedianMilliseconds), \"latency_lower_p99_ms\": \(latency.lowerBoundP99Milliseconds), "
                + "\"latency_floor_commits\": \(latency.floor?.commits ?? 0), "
                + "\"latency_floor_median_ms\": \(Self.json(latency.floor?.medianMilliseconds)), \"latency_floor_p99_ms\": \(Self.json(latency.floor?.p99Milliseconds)), "
                + "\"latency_floor_lower_median_ms\": \(Self.json(latency.floor?.lowerBoundMedianMilliseconds)), \"latency_floor_lower_p99_ms\": \(Self.json(latency.floor?.lowerBoundP99Milliseconds))"
                + (fanout.map { ", \"fanout\": \($0.json)" } ?? "") + "}"
        }

        private static func milliseconds(_ figure: Double?) -> String {
            figure.map { String(format: "%.2f", $0) } ?? "-"
        }

        private static func json(_ figure: Double?) -> String {
            figure.map { "\($0)" } ?? "null"
        }
    }

    /// - Parameter startCommitter: As ``ExternalLatencyBenchmark/run(path:startCommitter:)``,
    ///   given the benchmark database's URL.
    public func run(startCommitter: (_ path: String, _ commits: Int, _ gapMilliseconds: Int) throws -> (Process, Pipe)) async throws -> Report {
        guard var components = URLComponents(string: serverURL) else { throw BenchmarkError("\(serverURL) is not a PostgreSQL URL") }
        let name = "trackedmodels_bench_\(ProcessInfo.processInfo.processIdentifier)"
        let admin = try await Self.connect(components)
        try await Self.run("DROP DATABASE IF EXISTS \(name)", on: admin)
        do {
            try await Self.run("CREATE DATABASE \(name)", on: admin)
        } catch {
            try? await admin.close()
            throw BenchmarkError("the benchmark makes a database of its own on the server, and \(components.user ?? "the user") may not create one (\(String(reflecting: error))); grant it CREATEDB")
        }
        components.path = "/\(name)"
        let url = components.string!
        do {
            let report = try await measure(url: url, components: components, startCommitter: startCommitter)
            try await Self.run("DROP DATABASE \(name) WITH (FORCE)", on: admin)
            try await admin.close()
            return report
        } catch {
            try? await Self.run("DROP DATABASE \(name) WITH (FORCE)", on: admin)
            try? await admin.close()
            throw error
        }
    }

    private func measure(url: String, components: URLComponents, startCommitter: (_ path: String, _ commits: Int, _ gapMilliseconds: Int) throws -> (Process, Pipe)) async throws -> Report {
        var configuration = ModelStore.Configuration()
        configuration.createsMissingTables = true
        configuration.flushInterval = .seconds(3600)
        configuration.pendingThreshold = Int.max
        let store = try await ModelStore.open(.postgres(url), models: [BenchmarkRow.self], configuration: configuration)
        try store.insert(contentsOf: (0..<Int64(rows)).map { BenchmarkRow(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let objects = try await store.async.fetch(FetchDescriptor<BenchmarkRow>(sortBy: [SortDescriptor(\.id)]))
        var flushSamples: [Double] = []
        for round in 0..<rounds {
            // From the first assignment to the acknowledgement, as the SQLite figure is taken.
            let start = ContinuousClock.now
            for row in objects { row.title = "Row \(row.id) v\(round)" }
            try await store.flush()
            flushSamples.append(Double(rows) / (ContinuousClock.now - start).timeInterval)
        }
        try await store.close()

        let raw = try await Self.connect(components)
        var rawSamples: [Double] = []
        for round in 0..<rounds {
            // Values are made inside the clock, as the flush's are (by the assignments).
            let start = ContinuousClock.now
            try await Self.run("BEGIN", on: raw)
            for id in 0..<Int64(rows) {
                try await raw.query("UPDATE rows SET title = \("Row \(id) raw\(round)") WHERE id = \(id)", logger: Self.logger)
            }
            try await Self.run("COMMIT", on: raw)
            rawSamples.append(Double(rows) / (ContinuousClock.now - start).timeInterval)
        }
        try await raw.close()

        var latency = ExternalLatencyBenchmark()
        latency.commits = commits
        let listener = try await BareListener.start(Self.configuration(components), logger: Self.logger)
        latency.bareListener = listener
        let figures: ExternalLatencyBenchmark.Report
        do {
            figures = try await latency.run(path: url, startCommitter: startCommitter)
        } catch {
            await listener.stop()
            throw error
        }
        await listener.stop()
        var fanoutFigures: FanoutBenchmark.Report?
        if let fanout {
            let reader = try await Self.connect(components)
            do {
                fanoutFigures = try await fanout.benchmark.run(url: url, startWatcher: fanout.startWatcher, startWriter: fanout.startWriter) {
                    var counts: [Int64] = []
                    for try await count in try await reader.query("SELECT count FROM rows ORDER BY id", logger: Self.logger).decode(Int64.self) {
                        counts.append(count)
                    }
                    return counts
                }
            } catch {
                try? await reader.close()
                throw error
            }
            try await reader.close()
        }
        return Report(rows: rows, flushRowsPerSecond: Figures.median(flushSamples), rawRowsPerSecond: Figures.median(rawSamples), latency: figures, fanout: fanoutFigures)
    }

    private static let logger = Logger(label: "TrackedModelsBenchmarks", factory: { _ in SwiftLogNoOpLogHandler() })

    private static func connect(_ components: URLComponents) async throws -> PostgresConnection {
        try await PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration(components), id: 1, logger: logger)
    }

    private static func configuration(_ components: URLComponents) -> PostgresConnection.Configuration {
        PostgresConnection.Configuration(
            host: components.host ?? "localhost", port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: components.path.isEmpty ? nil : String(components.path.dropFirst()), tls: .disable
        )
    }

    private static func run(_ sql: String, on connection: PostgresConnection) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }
}
