import ArgumentParser
import Foundation
import TrackedModelsBenchmarks

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the headline table: events and ns per bump, and flush throughput.",
        discussion: """
            Runs in a temporary database. Build in release mode for real figures: \
            swift run -c release modelctl bench --rows 100000. With --db postgres://..., measures \
            PostgreSQL on that server instead (commit-to-event latency between two processes, and \
            flush throughput against a raw postgres-nio loop), in a database of its own that it \
            creates and drops: the URL's user needs CREATEDB.
            """
    )

    @Option(parsing: .unconditional, help: "How many rows the list has.")
    var rows = 1_000

    @Option(parsing: .unconditional, help: "Bumps per round for the contenders that notify one subscriber.")
    var bumps = 20_000

    @Option(parsing: .unconditional, help: "Commits another modelctl process makes for the cross-process latency figures.")
    var commits = 100

    @Option(parsing: .unconditional, help: "Rows fetched and dropped for the memory figures (0 skips them).")
    var memoryRows = 1_000_000

    @Option(parsing: .unconditional, help: "Rows bulk-inserted, against a raw INSERT loop (0 skips it).")
    var bulkRows = 1_000_000

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(name: .customLong("db"), help: "A postgres:// server URL: measure PostgreSQL there instead of SQLite.")
    var database: String?

    func validate() throws {
        guard (1...10_000_000).contains(rows) else { throw ValidationError("--rows must be from 1 to 10,000,000, not \(rows)") }
        guard (1...100_000_000).contains(bumps) else { throw ValidationError("--bumps must be from 1 to 100,000,000, not \(bumps)") }
        guard (1...100_000).contains(commits) else { throw ValidationError("--commits must be from 1 to 100,000, not \(commits)") }
        guard (0...10_000_000).contains(memoryRows) else { throw ValidationError("--memory-rows must be from 0 to 10,000,000, not \(memoryRows)") }
        guard (0...10_000_000).contains(bulkRows) else { throw ValidationError("--bulk-rows must be from 0 to 10,000,000, not \(bulkRows)") }
    }

    func run() async throws {
        try await reportingErrors(operation: "bench", path: FileManager.default.temporaryDirectory.path) {
            try await bench()
        }
    }

    /// Starts the other process of a latency measurement.
    private static func startCommitter(_ path: String, _ commits: Int, _ gap: Int) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["_commit-timed", "--db", path, "--commits", String(commits), "--gap", String(gap)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        return (process, output)
    }

    @MainActor private func bench() async throws {
        if let database {
            guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw ValidationError("--db takes a postgres:// server URL (the SQLite benchmark runs in a temporary file of its own)")
            }
            var benchmark = PostgresBenchmark(serverURL: database)
            benchmark.rows = min(rows, 100_000)
            benchmark.commits = commits
            let report = try await benchmark.run(startCommitter: Self.startCommitter)
            print(json ? report.json : report.table)
            return
        }
        var benchmark = HeadlineBenchmark(rows: rows)
        benchmark.bumps = bumps
        benchmark.latencyCommits = commits
        benchmark.startCommitter = Self.startCommitter
        let folder = FileManager.default.temporaryDirectory.path
        let report = try await benchmark.run(in: folder)
        var live = LiveListBenchmark(rows: rows)
        live.bumps = bumps
        let liveList = try await live.run(in: folder)
        var sparse = SparseListBenchmark(rows: rows)
        sparse.bumps = bumps
        let sparseList = try await sparse.run(in: folder)
        let relatedList = try await RelatedListBenchmark(rows: rows).run(in: folder)
        var liveForms = LiveFormsBenchmark(rows: rows)
        liveForms.bumps = bumps
        let forms = try await liveForms.run(in: folder)
        let memory = memoryRows > 0 ? try await MemoryBenchmark(rows: memoryRows).run(in: folder) : nil
        let bulk = bulkRows > 0 ? try await BulkInsertBenchmark(rows: bulkRows).run(in: folder) : nil
        if json {
            var object = report.json.dropLast() + ", \"live_list\": \(liveList.json), \"sparse_list\": \(sparseList.json), \"related_list\": \(relatedList.json), \(forms.jsonMembers)"
            if let memory { object += ", \"memory\": \(memory.json)" }
            if let bulk { object += ", \"bulk_insert\": \(bulk.json)" }
            print(object + "}")
        } else {
            print(report.table)
            print(liveList.table)
            print(sparseList.table)
            print(relatedList.table)
            print(forms.table)
            if let memory { print(memory.table) }
            if let bulk { print(bulk.table) }
        }
    }
}
