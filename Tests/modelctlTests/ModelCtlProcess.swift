import Foundation
import PostgresTestSupport
import Testing

/// Runs the built `modelctl` binary in a temporary directory.
struct ModelCtlProcess {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// A fresh working directory, removed by the caller's `TemporaryFolder`.
    let directory: URL

    static var executable: URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("modelctl").path), folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("modelctl")
    }

    /// The repository's `Schemas/` folder.
    static var repositorySchemas: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Schemas").path
    }

    /// Runs SQL in the `sqlite3` shell (`apt-get install sqlite3`) and returns its exit status.
    static func sqlite3(_ path: String, _ sql: String) async throws -> Int32 {
        let shell = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
            .map { "\($0)/sqlite3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(shell, "the sqlite3 shell is not installed; apt-get install sqlite3"))
        process.arguments = [path, sql]
        try process.run()
        return await process.exitStatus()
    }

    /// Whether a started process has exited (a zombie not yet reaped counts), read from
    /// `/proc/PID/stat`; without `/proc`, whether it can no longer be signalled.
    static func hasExited(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return kill(pid, 0) != 0 }
        // The state follows the command name, which is in parentheses and may hold spaces.
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first == "Z"
    }

    /// What ``signal(_:_:when:settling:)`` saw.
    struct Signalled {
        /// Whether the process was still running when it was signalled.
        var wasRunning: Bool
        /// How long it took to exit after the signal.
        var stopped: Duration
    }

    /// Sends `signal` to a started process once `ready` holds (polled every millisecond; after
    /// two minutes, whether it holds or not) and `settling` has passed after that; returns
    /// whether it was still running then, and how long it took to exit, seen in `/proc`. A
    /// process that ended first is not signalled; one still running 30 s after the signal is
    /// killed (SIGKILL), so that waiting for its exit status cannot hang.
    ///
    /// All of it runs on a thread of its own: a poll on the global executor's threads can
    /// stall behind other tests for longer than the work it waits to interrupt (CI saw a copy
    /// run to its end so), and what blocks those threads adds nothing to the time measured.
    static func signal(_ process: Process, _ signal: Int32, when ready: @escaping @Sendable () -> Bool, settling: Duration = .zero) async -> Signalled {
        let pid = process.processIdentifier
        return await onThreadOfItsOwn {
            let started = ContinuousClock.now
            while !hasExited(pid), !ready(), ContinuousClock.now - started < .seconds(120) {
                usleep(1_000)
            }
            if settling > .zero { usleep(UInt32(settling / .microseconds(1))) }
            guard !hasExited(pid) else { return Signalled(wasRunning: false, stopped: .zero) }
            let sent = ContinuousClock.now
            kill(pid, signal)
            while !hasExited(pid) {
                guard ContinuousClock.now - sent < .seconds(30) else {
                    kill(pid, SIGKILL)
                    break
                }
                usleep(1_000)
            }
            return Signalled(wasRunning: true, stopped: ContinuousClock.now - sent)
        }
    }

    /// The size of a file in bytes, 0 when there is none.
    static func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Whether a started process has taken SIGINT and SIGTERM over (ignored or caught, by the
    /// `SigIgn` and `SigCgt` masks of `/proc/PID/status`): before that, a signal kills it.
    static func handlesInterrupts(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        func mask(_ name: String) -> UInt64 {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return UInt64(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
        }
        let wanted: UInt64 = 1 << (UInt64(SIGINT) - 1) | 1 << (UInt64(SIGTERM) - 1)
        return (mask("SigIgn") | mask("SigCgt")) & wanted == wanted
    }

    /// Runs modelctl to its end and returns its peak resident memory in kB, expecting it to
    /// succeed, as GNU time (`apt-get install time`) reports it: the kernel's count, handed
    /// over when the process exits, so that no sampler stalled behind other tests can miss the
    /// peak.
    ///
    /// Through `time`, because the kernel carries the peak of the memory a child shares or
    /// copies before its `exec` over into the child's count: a child started by this test
    /// process would report this process's own peak whenever that is the larger. `time`'s
    /// child starts from `time`'s few hundred kB.
    ///
    /// ```swift
    /// let peak = try await workspace.modelctl.peakMemory(["seed", "--rows", "1000", "--db", "demo.sqlite"])
    /// ```
    func peakMemory(_ arguments: [String]) async throws -> Int {
        let time = URL(fileURLWithPath: "/usr/bin/time")
        try #require(FileManager.default.isExecutableFile(atPath: time.path), "GNU time is not installed; apt-get install time")
        let report = path("peak-memory.txt")
        let errors = Pipe()
        let process = try start(time, ["--format", "%M", "--output", report, Self.executable.path] + arguments, stdout: Pipe(), stderr: errors)
        let status = await process.exitStatus()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0, "modelctl \(arguments.joined(separator: " ")) failed: \(message)")
        let figure = try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Int(figure), "time reported no peak memory but \(figure)")
    }

    func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    func start(_ arguments: [String], stdout: Pipe = Pipe(), stderr: Pipe = Pipe()) throws -> Process {
        try start(Self.executable, arguments, stdout: stdout, stderr: stderr)
    }

    /// Starts any executable in the directory, with `$MODELCTL` naming the built binary.
    private func start(_ executable: URL, _ arguments: [String], stdout: Pipe, stderr: Pipe) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "MODELCTL_DB")
        environment["MODELCTL"] = Self.executable.path
        process.environment = environment
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        return process
    }

    /// Runs a `/bin/sh` script in the directory (for `ulimit`, raw bytes in arguments, or
    /// another user), where `$MODELCTL` is the built binary.
    func runShell(_ script: String) async throws -> Output {
        let stdout = Pipe()
        let stderr = Pipe()
        return await collect(try start(URL(fileURLWithPath: "/bin/sh"), ["-c", script], stdout: stdout, stderr: stderr), stdout, stderr)
    }

    @discardableResult
    func run(_ arguments: String...) async throws -> Output {
        try await run(arguments)
    }

    func run(_ arguments: [String]) async throws -> Output {
        let stdout = Pipe()
        let stderr = Pipe()
        return await collect(try start(arguments, stdout: stdout, stderr: stderr), stdout, stderr)
    }

    /// Reads a started process's output to the end and waits for it to exit.
    private func collect(_ process: Process, _ stdout: Pipe, _ stderr: Pipe) async -> Output {
        await onThreadOfItsOwn {
            let out = stdout.fileHandleForReading.readDataToEndOfFile()
            let err = stderr.fileHandleForReading.readDataToEndOfFile()
            // Closed now rather than when Foundation lets go of the process, which may be
            // never: the test process runs hundreds of these, and past about 1,360 open
            // descriptors Foundation's `Process.run` reads past its listing of them and crashes.
            try? stdout.fileHandleForReading.close()
            try? stderr.fileHandleForReading.close()
            process.waitUntilExit()
            return Output(
                status: process.terminationStatus,
                stdout: String(decoding: out, as: UTF8.self),
                stderr: String(decoding: err, as: UTF8.self)
            )
        }
    }
}

/// A temporary directory with a `modelctl` runner, removed when released.
final class Workspace: Sendable {
    let modelctl: ModelCtlProcess

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelctlTests-\(UUID().uuidString)")
        // Searchable by every user whatever the umask: some tests run modelctl as `nobody`.
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        modelctl = ModelCtlProcess(directory: url)
    }

    deinit {
        try? FileManager.default.removeItem(at: modelctl.directory)
    }

    /// A copy of the repository's migrations in the workspace, to edit.
    func copySchemas() throws -> String {
        let target = modelctl.path("Schemas")
        try FileManager.default.copyItem(atPath: ModelCtlProcess.repositorySchemas, toPath: target)
        return target
    }
}
