public import Foundation
import Synchronization
import TrackedModels

/// Many app servers watching one database: `watchers` processes, each a store of its own that
/// hears every change to the `rows` table, while `writers` processes commit row updates for
/// `duration`, as fast as they can or together at a set rate (see ``FanoutWatcher`` and
/// ``FanoutWriter``).
///
/// Reported: the rows committed per second; commit → event, the latency from the writer's
/// `flush()` returning (the commit acknowledged) to a watcher hearing the change, over every
/// watcher's samples (a watcher that heard before the acknowledgement reached the writer counts
/// 0); the same from the writer's clock before the change (so it includes making and committing
/// the whole commit); and the rows whose final count some watcher does not show, once every
/// watcher has had up to 30 s to catch up with what the database holds at the end. Also the
/// CPU time a watcher process spends per row it hears (from ready to showing every commit, the
/// subscriber's own work included): what each watcher more costs, whatever the load.
@MainActor
public struct FanoutBenchmark {
    public var watchers: Int
    public var writers = 2
    /// Rows each commit changes (distinct rows, each its count incremented).
    public var rowsPerCommit = 100
    public var duration: Duration = .seconds(10)
    /// The rows a second all writers together commit, on a fixed schedule; nil: as fast as they
    /// can. A system that cannot keep up commits fewer (``Report/rowsPerSecond``).
    public var targetRowsPerSecond: Double?

    public init(watchers: Int) {
        self.watchers = watchers
    }

    public struct Report: Sendable {
        public var watchers: Int
        public var writers: Int
        public var rowsPerCommit: Int
        /// The rows a second the writers were asked for; nil when they wrote as fast as they could.
        public var targetRowsPerSecond: Double?
        public var seconds: Double
        /// Rows committed per second by all writers together.
        public var rowsPerSecond: Double
        public var commits: Int
        /// Changes heard, over every watcher (a row changed twice before a watcher looked is
        /// heard once, at its last value).
        public var samples: Int
        /// Commit → event: from the writer's `flush()` returning to a watcher hearing it.
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        /// From the writer's clock before the change to a watcher hearing it.
        public var p50FromChangeMilliseconds: Double
        public var p99FromChangeMilliseconds: Double
        /// Rows whose final count some watcher does not show.
        public var lost: Int
        /// The watchers' CPU time (user and system) per row committed and each watcher, in µs.
        public var watcherCPUMicrosecondsPerRow: Double

        public var json: String {
            "{\"watchers\": \(watchers), \"writers\": \(writers), \"rows_per_commit\": \(rowsPerCommit), "
                + "\"target_rows_per_s\": \(targetRowsPerSecond.map { Figures.format($0, digits: 0) } ?? "null"), \"seconds\": \(Figures.format(seconds, digits: 2)), "
                + "\"rows_per_s\": \(Figures.format(rowsPerSecond, digits: 0)), \"commits\": \(commits), \"samples\": \(samples), "
                + "\"p50_ms\": \(Figures.format(p50Milliseconds, digits: 2)), \"p99_ms\": \(Figures.format(p99Milliseconds, digits: 2)), "
                + "\"p50_from_change_ms\": \(Figures.format(p50FromChangeMilliseconds, digits: 2)), \"p99_from_change_ms\": \(Figures.format(p99FromChangeMilliseconds, digits: 2)), "
                + "\"watcher_cpu_us_per_row\": \(Figures.format(watcherCPUMicrosecondsPerRow, digits: 2)), \"lost\": \(lost)}"
        }

        public var table: String {
            """
              fan-out: \(watchers) watcher processes, \(writers) writers committing \(rowsPerCommit) rows at a time \(targetRowsPerSecond.map { "at \(Figures.format($0, digits: 0)) rows/s" } ?? "as fast as they can") for \(Figures.format(seconds, digits: 1)) s
                \(Figures.format(rowsPerSecond, digits: 0)) rows/s committed (\(commits) commits), each heard by every watcher
                commit → event at the watchers (from the writer's flush returning): p50 \(Figures.format(p50Milliseconds, digits: 2)) ms, p99 \(Figures.format(p99Milliseconds, digits: 2)) ms over \(samples) events
                the same from before the change: p50 \(Figures.format(p50FromChangeMilliseconds, digits: 2)) ms, p99 \(Figures.format(p99FromChangeMilliseconds, digits: 2)) ms
                a watcher's CPU time per row it hears: \(Figures.format(watcherCPUMicrosecondsPerRow, digits: 2)) µs
                lost: \(lost) rows whose final count some watcher does not show
            """
        }
    }

    /// A started process of the benchmark, with its standard input and output.
    public struct Started {
        public var process: Process
        public var input: Pipe
        public var output: Pipe

        public init(process: Process, input: Pipe, output: Pipe) {
            self.process = process
            self.input = input
            self.output = output
        }
    }

    /// Runs the benchmark on a database whose `rows` table holds at least ``rowsPerCommit`` rows.
    ///
    /// - Parameters:
    ///   - startWatcher: Starts a watcher process (``FanoutWatcher/run(url:)``) on the URL.
    ///   - startWriter: Starts a writer process (``FanoutWriter/run(_:)``) with its plan.
    ///   - sum: The database's sum of counts, read once the writers are done.
    ///   - counts: The database's counts in key order, read then too.
    public func run(
        url: String, startWatcher: (_ url: String) throws -> Started,
        startWriter: (FanoutWriter.Plan) throws -> Started,
        counts: () async throws -> [Int64]
    ) async throws -> Report {
        var started: [Started] = []
        defer {
            for process in started where process.process.isRunning { process.process.terminate() }
        }
        var watching: [ProcessOutput] = []
        for _ in 0..<watchers {
            let watcher = try startWatcher(url)
            started.append(watcher)
            watching.append(ProcessOutput(watcher.output))
        }
        // Every watcher holds the rows and listens before the first commit.
        for output in watching {
            guard await output.waitFor(line: "ready", timeout: .seconds(120)) else {
                throw BenchmarkError("a fan-out watcher did not get ready: \(output.text)")
            }
        }
        var writing: [(Started, ProcessOutput)] = []
        // Each writer commits its share of the rate: one commit every `interval`.
        let interval = targetRowsPerSecond.map { Duration.seconds(Double(rowsPerCommit * writers) / $0) }
        for index in 0..<writers {
            let writer = try startWriter(FanoutWriter.Plan(url: url, perCommit: rowsPerCommit, duration: duration, index: index, writers: writers, interval: interval))
            started.append(writer)
            writing.append((writer, ProcessOutput(writer.output)))
        }
        var rowsPerSecond = 0.0
        var commits = 0
        var committedRows = 0
        var seconds = 0.0
        // When each writer's commits were acknowledged, by writer and commit.
        var returned: [[UInt64]] = []
        for (writer, output) in writing {
            await Self.exit(of: writer.process)
            let lines = await output.whole().split(separator: "\n")
            let words = lines.first { $0.hasPrefix("committed ") }?.split(separator: " ") ?? []
            let times = lines.first { $0.hasPrefix("returned") }?.split(separator: " ").dropFirst().compactMap { UInt64($0) }
            guard writer.process.terminationStatus == 0, words.count == 4, let rows = Int(words[1]), let count = Int(words[2]),
                  let took = Double(words[3]), took > 0, let times, times.count == count
            else {
                throw BenchmarkError("a fan-out writer failed (status \(writer.process.terminationStatus)): \(output.text.suffix(2_000))")
            }
            returned.append(times)
            // Each over the time its own commits took (not its start-up and its store's opening).
            rowsPerSecond += Double(rows) / took
            committedRows += rows
            commits += count
            seconds = max(seconds, took)
        }
        let expected = try await counts()
        let sum = expected.reduce(0, +)
        for watcher in started.prefix(watchers) {
            watcher.input.fileHandleForWriting.write(Data("stop \(sum)\n".utf8))
        }
        var fromCommit: [UInt64] = []
        var fromChange: [UInt64] = []
        var lostRows = Set<Int>()
        var watcherCPU: UInt64 = 0
        for (watcher, output) in zip(started.prefix(watchers), watching) {
            await Self.exit(of: watcher.process)
            let lines = await output.whole().split(separator: "\n")
            guard watcher.process.terminationStatus == 0,
                  let heard = lines.first(where: { $0.hasPrefix("samples") }), let final = lines.first(where: { $0.hasPrefix("final") }),
                  let cpu = lines.first(where: { $0.hasPrefix("cpu ") }).flatMap({ UInt64($0.dropFirst(4)) })
            else {
                throw BenchmarkError("a fan-out watcher failed (status \(watcher.process.terminationStatus)): \(output.text.suffix(2_000))")
            }
            watcherCPU += cpu
            for sample in heard.split(separator: " ").dropFirst() {
                let parts = sample.split(separator: ".").compactMap { UInt64($0) }
                guard parts.count == 4, returned.indices.contains(Int(parts[0])), returned[Int(parts[0])].indices.contains(Int(parts[1])) else {
                    throw BenchmarkError("a fan-out watcher heard a change no writer committed: \(sample)")
                }
                let (acknowledged, before, at) = (returned[Int(parts[0])][Int(parts[1])], parts[2], parts[3])
                fromCommit.append(at > acknowledged ? at - acknowledged : 0)
                fromChange.append(at - min(at, before))
            }
            let shown = final.split(separator: " ").dropFirst().map { Int64($0) }
            for (index, count) in expected.enumerated() where index >= shown.count || shown[index] != count {
                lostRows.insert(index)
            }
        }
        fromCommit.sort()
        fromChange.sort()
        func percentile(_ samples: [UInt64], _ fraction: Double) -> Double {
            samples.isEmpty ? .nan : Double(samples[min(samples.count - 1, Int(Double(samples.count) * fraction))]) / 1_000_000
        }
        return Report(
            watchers: watchers, writers: writers, rowsPerCommit: rowsPerCommit, targetRowsPerSecond: targetRowsPerSecond, seconds: seconds, rowsPerSecond: rowsPerSecond,
            commits: commits, samples: fromCommit.count, p50Milliseconds: percentile(fromCommit, 0.5), p99Milliseconds: percentile(fromCommit, 0.99),
            p50FromChangeMilliseconds: percentile(fromChange, 0.5), p99FromChangeMilliseconds: percentile(fromChange, 0.99), lost: lostRows.count,
            watcherCPUMicrosecondsPerRow: Double(watcherCPU) / Double(max(1, committedRows * watchers))
        )
    }

    /// Waits for a process to exit. (Foundation's `waitUntilExit()` spins a run loop on Linux,
    /// taking a core from the processes measured.)
    private static func exit(of process: Process) async {
        while process.isRunning {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// Everything a process writes to a pipe, read as it comes on a thread of its own.
final class ProcessOutput: Sendable {
    private let data = Mutex(Data())
    private let ended = Atomic(false)

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in read(handle) }
    }

    private func read(_ handle: FileHandle) {
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            data.withLock { $0.append(chunk) }
        }
        ended.store(true, ordering: .releasing)
    }

    var text: String { String(decoding: data.withLock { $0 }, as: UTF8.self) }

    /// Everything the process wrote, once the pipe is closed (the process has exited, and the
    /// reading thread has taken the rest).
    func whole() async -> String {
        while !ended.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return text
    }

    /// Waits until a line equal to `line` came, or the output ended, or `timeout` passed.
    func waitFor(line: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if text.split(separator: "\n").contains(where: { $0 == line }) { return true }
            if ended.load(ordering: .acquiring) { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
