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

    @Option(parsing: .unconditional, help: "Measure only these parts, comma-separated (\(BenchPart.allCases.map(\.rawValue).joined(separator: ", "))); all by default.")
    var only: BenchParts = BenchParts(parts: Set(BenchPart.allCases))

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(name: .customLong("db"), help: "A postgres:// server URL: measure PostgreSQL there instead of SQLite.")
    var database: String?

    @Option(parsing: .unconditional, help: "With --db: also measure fan-out to this many watcher processes, each a store of its own (0 skips it).")
    var watchers = 0

    @Option(parsing: .unconditional, help: "With --watchers: the writer processes committing row updates, as fast as they can unless --rate.")
    var writers = 2

    @Option(parsing: .unconditional, help: "With --watchers: how long the writers write, in seconds.")
    var seconds = 10

    @Option(parsing: .unconditional, help: "With --watchers: the rows each commit changes.")
    var perCommit = 100

    @Option(parsing: .unconditional, help: "With --watchers: the rows a second all writers together commit, on a fixed schedule (0: as fast as they can).")
    var rate = 0

    func validate() throws {
        guard (1...10_000_000).contains(rows) else { throw ValidationError("--rows must be from 1 to 10,000,000, not \(rows)") }
        guard (1...100_000_000).contains(bumps) else { throw ValidationError("--bumps must be from 1 to 100,000,000, not \(bumps)") }
        guard (1...100_000).contains(commits) else { throw ValidationError("--commits must be from 1 to 100,000, not \(commits)") }
        guard (0...10_000_000).contains(memoryRows) else { throw ValidationError("--memory-rows must be from 0 to 10,000,000, not \(memoryRows)") }
        guard (0...10_000_000).contains(bulkRows) else { throw ValidationError("--bulk-rows must be from 0 to 10,000,000, not \(bulkRows)") }
        guard (0...100).contains(watchers) else { throw ValidationError("--watchers must be from 0 to 100, not \(watchers)") }
        guard (1...16).contains(writers) else { throw ValidationError("--writers must be from 1 to 16, not \(writers)") }
        guard (1...3_600).contains(seconds) else { throw ValidationError("--seconds must be from 1 to 3,600, not \(seconds)") }
        guard (1...10_000).contains(perCommit) else { throw ValidationError("--per-commit must be from 1 to 10,000, not \(perCommit)") }
        guard (0...10_000_000).contains(rate) else { throw ValidationError("--rate must be from 0 to 10,000,000 rows a second, not \(rate)") }
        guard perCommit <= rows else { throw ValidationError("--per-commit \(perCommit) needs at least as many --rows") }
        guard database != nil || watchers == 0 else { throw ValidationError("--watchers measures fan-out on PostgreSQL; pass --db postgres://...") }
        let isSelected = only.parts.count < BenchPart.allCases.count
        guard database == nil || !isSelected else { throw ValidationError("--only selects parts of the SQLite benchmark; drop it with --db") }
        guard BenchPart.allCases.contains(where: measures) else { throw ValidationError("--only \(only.parts.map(\.rawValue).sorted().joined(separator: ",")) measures nothing with --memory-rows 0 or --bulk-rows 0") }
    }

    /// Whether a part is measured: selected by `--only`, and given rows to measure.
    private func measures(_ part: BenchPart) -> Bool {
        switch part {
        case .memory where memoryRows == 0, .bulkInsert where bulkRows == 0: false
        default: only.parts.contains(part)
        }
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

    /// Starts this executable with arguments, its standard input and output piped.
    private static func start(_ arguments: [String]) throws -> FanoutBenchmark.Started {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        return FanoutBenchmark.Started(process: process, input: input, output: output)
    }

    @MainActor private func bench() async throws {
        if let database {
            guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
                throw ValidationError("--db takes a postgres:// server URL (the SQLite benchmark runs in a temporary file of its own)")
            }
            var benchmark = PostgresBenchmark(serverURL: database)
            benchmark.rows = min(rows, 100_000)
            benchmark.commits = commits
            if watchers > 0 {
                var fanout = FanoutBenchmark(watchers: watchers)
                fanout.writers = writers
                fanout.duration = .seconds(seconds)
                fanout.rowsPerCommit = perCommit
                fanout.targetRowsPerSecond = rate > 0 ? Double(rate) : nil
                benchmark.fanout = (fanout, { try Self.start(["_fanout-watch", "--db", $0]) }, { plan in
                    try Self.start(FanoutWriteCommand.arguments(plan))
                })
            }
            let report = try await benchmark.run(startCommitter: Self.startCommitter)
            print(json ? report.json : report.table)
            return
        }
        let folder = FileManager.default.temporaryDirectory.path
        // Each part runs where it is selected, giving its members of the JSON object and its
        // lines of the table.
        let parts: [(part: BenchPart, run: () async throws -> (members: String, table: String))] = [
            (.headline, {
                var benchmark = HeadlineBenchmark(rows: rows)
                benchmark.bumps = bumps
                benchmark.latencyCommits = commits
                benchmark.startCommitter = Self.startCommitter
                let report = try await benchmark.run(in: folder)
                return (String(report.json.dropFirst().dropLast()), report.table)
            }),
            (.liveList, {
                var live = LiveListBenchmark(rows: rows)
                live.bumps = bumps
                let report = try await live.run(in: folder)
                return ("\"live_list\": \(report.json)", report.table)
            }),
            (.sparseList, {
                var sparse = SparseListBenchmark(rows: rows)
                sparse.bumps = bumps
                let report = try await sparse.run(in: folder)
                return ("\"sparse_list\": \(report.json)", report.table)
            }),
            (.relatedList, {
                let report = try await RelatedListBenchmark(rows: rows).run(in: folder)
                return ("\"related_list\": \(report.json)", report.table)
            }),
            (.forms, {
                var liveForms = LiveFormsBenchmark(rows: rows)
                liveForms.bumps = bumps
                let report = try await liveForms.run(in: folder)
                return (report.jsonMembers, report.table)
            }),
            (.memory, {
                let report = try await MemoryBenchmark(rows: memoryRows).run(in: folder)
                return ("\"memory\": \(report.json)", report.table)
            }),
            (.bulkInsert, {
                let report = try await BulkInsertBenchmark(rows: bulkRows).run(in: folder)
                return ("\"bulk_insert\": \(report.json)", report.table)
            }),
        ]
        var members: [String] = []
        var tables: [String] = []
        for (part, run) in parts where measures(part) {
            let output = try await run()
            members.append(output.members)
            tables.append(output.table)
        }
        print(json ? "{" + members.joined(separator: ", ") + "}" : tables.joined(separator: "\n"))
    }
}

/// A part of the bench, for `--only`.
enum BenchPart: String, CaseIterable {
    case headline, liveList = "live-list", sparseList = "sparse-list", relatedList = "related-list", forms, memory, bulkInsert = "bulk-insert"
}

/// The parts `--only` names: `live-list,forms`.
struct BenchParts: ExpressibleByArgument {
    var parts: Set<BenchPart>

    init(parts: Set<BenchPart>) {
        self.parts = parts
    }

    init?(argument: String) {
        let names = argument.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let parts = names.compactMap(BenchPart.init(rawValue:))
        guard !names.isEmpty, parts.count == names.count else { return nil }
        self.parts = Set(parts)
    }

    var defaultValueDescription: String { "all" }
}
