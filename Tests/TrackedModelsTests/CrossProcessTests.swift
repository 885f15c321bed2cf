import Foundation
import PostgresTestSupport
import Testing
import TrackedModels

/// Runs executables built next to the test binary (the helper, modelctl) or found on the PATH.
enum Helper {
    static func builtExecutable(_ name: String) -> URL {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // Under XCTest the binary sits inside a bundle folder; executables are beside the bundle.
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent(name)
    }

    static func start(_ arguments: [String], executable: URL = builtExecutable("tracked-increment-helper"), output: Pipe = Pipe()) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        return process
    }

    /// Runs a command to completion and returns its exit status.
    static func run(_ arguments: [String], executable: URL) async throws -> Int32 {
        try await start(arguments, executable: executable, output: Pipe()).exitStatus()
    }

    /// The `sqlite3` shell (`apt-get install sqlite3`).
    static var sqlite3: URL {
        get throws {
            let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
                .map { "\($0)/sqlite3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
            return URL(fileURLWithPath: try #require(path, "the sqlite3 shell is not installed; apt-get install sqlite3"))
        }
    }
}

/// Other processes through the database, on both engines: no increment is lost, and what a
/// flush acknowledged survives a `kill -9`.
@MainActor
@Suite(.serialized) struct CrossProcessTests {
    @Test(arguments: TestEngine.allCases)
    func twoProcessesIncrementingOneRowLoseNothing(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database)
        try store.insert(Row(id: 0, title: "Row 0", count: 0))
        try await store.close()
        // On PostgreSQL each flush is a round trip and a commit: flushing every tenth increment
        // keeps the run short while the two still commit thousands of times in between.
        let flushEvery = engine == .postgres ? "10" : "1"
        let processes = try (0..<2).map { _ in try Helper.start(["increment", database, "0", "10000", flushEvery]) }
        for process in processes {
            #expect(await process.exitStatus() == 0)
        }
        #expect(try await engine.sql(database, "SELECT count FROM rows") == "20000")
    }

    @Test(arguments: TestEngine.allCases)
    func aKilledProcessKeepsWhatFlushAcknowledged(_ engine: TestEngine) async throws {
        let directory = try TemporaryDirectory()
        let database = try await engine.makeDatabase(in: directory)
        let store = try await engine.open(database)
        try store.insert(Row(id: 0, title: "Row 0", count: 0))
        try await store.close()
        let output = Pipe()
        let process = try Helper.start(["write-then-wait", database, "0"], output: output)
        let line = await onThreadOfItsOwn {
            var text = ""
            while !text.contains("\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text
        }
        kill(process.processIdentifier, SIGKILL)
        #expect(await process.exitStatus() == SIGKILL)
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(line.hasPrefix("flushed written by "))
        let title = line.dropFirst("flushed ".count).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await engine.sql(database, "SELECT title FROM rows WHERE id = 0") == title)
    }
}
