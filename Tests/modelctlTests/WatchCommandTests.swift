import Foundation
import PostgresTestSupport
import Testing

@Suite struct WatchCommandTests {
    /// Reads a started process's stdout until it holds `lines` lines (or the process ends).
    private func read(_ pipe: Pipe, lines: Int) async -> String {
        await onThreadOfItsOwn {
            var text = ""
            while text.filter({ $0 == "\n" }).count < lines {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text
        }
    }

    /// Starts `modelctl watch` and waits until it says, on stderr, that it is watching: from
    /// then on no commit can slip past it. (Its file being open is too early a sign: it reads
    /// the file before its store opens the change log.)
    private func startWatch(_ workspace: Workspace, _ arguments: [String], output: Pipe, errors: Pipe = Pipe()) async throws -> Process {
        let process = try workspace.modelctl.start(["watch"] + arguments, stdout: output, stderr: errors)
        let said = await read(errors, lines: 1)
        #expect(said == "watching model.sqlite\n")
        return process
    }

    // (The watches below end at their first event, in milliseconds; their timeout only bounds
    // a hang, and a loaded machine can take seconds to start each modelctl process.)
    @Test func printsAnotherProcesssBumpAsAJSONLine() async throws {
        let workspace = try Workspace()
        try await workspace.modelctl.run("seed", "--rows", "100")
        let output = Pipe()
        let watch = try await startWatch(workspace, ["--row", "42", "--format", "json", "--count", "1", "--timeout", "60"], output: output)
        #expect(try await workspace.modelctl.run("bump", "42").status == 0)
        let line = await read(output, lines: 1)
        #expect(line == #"{"table": "rows", "row": 42, "kind": "update", "origin": "external", "columns": {"count": {"old": 0, "new": 1}}}"# + "\n")
        #expect(await watch.exitStatus() == 0)
    }

    @Test func filtersByRowAndColumn() async throws {
        let workspace = try Workspace()
        try await workspace.modelctl.run("seed", "--rows", "10")
        let output = Pipe()
        let watch = try await startWatch(workspace, ["--columns", "count", "--count", "1", "--timeout", "60"], output: output)
        #expect(try await workspace.modelctl.run("query", "SELECT 1").status == 0)
        try await workspace.modelctl.run("bump", "3", "--by", "5")
        let line = await read(output, lines: 1)
        #expect(line == "rows 3 update (external): count 0 → 5\n")
        #expect(await watch.exitStatus() == 0)
    }

    @Test func timeoutAndInterruptEndItCleanly() async throws {
        let workspace = try Workspace()
        try await workspace.modelctl.run("seed", "--rows", "1")
        let timedOut = try await workspace.modelctl.run("watch", "--timeout", "0.3")
        #expect(timedOut.status == 0)
        #expect(timedOut.stdout.isEmpty)
        let errors = Pipe()
        let interrupted = try await startWatch(workspace, [], output: Pipe(), errors: errors)
        kill(interrupted.processIdentifier, SIGINT)
        #expect(await interrupted.exitStatus() == 0)
        #expect(interrupted.terminationReason == .exit)
        // Nothing more than that it watched.
        let said = await onThreadOfItsOwn {
            defer { try? errors.fileHandleForReading.close() }
            return errors.fileHandleForReading.readDataToEndOfFile()
        }
        #expect(String(decoding: said, as: UTF8.self).isEmpty)
    }

    @Test func anUnknownColumnIsAUsageError() async throws {
        let workspace = try Workspace()
        try await workspace.modelctl.run("seed", "--rows", "1")
        let watch = try await workspace.modelctl.run("watch", "--columns", "nope")
        #expect(watch.status == 64)
        #expect(watch.stderr.contains("rows has no column 'nope'"))
    }
}
