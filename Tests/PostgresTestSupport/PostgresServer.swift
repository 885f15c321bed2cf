public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL server the PostgreSQL tests use: `$TRACKEDMODELS_POSTGRES_URL` when set (CI
/// starts a throwaway cluster with `.ci/postgres` and sets it), else a cluster this test
/// process starts the same way and removes at exit. Each test gets a database of its own.
///
/// Without a server (PostgreSQL's server programs are not installed), the tests that need one
/// are skipped with a message saying so; with `TRACKEDMODELS_REQUIRE_POSTGRES=1` (as CI sets
/// it) they fail instead.
public enum PostgresServer {
    /// The administrative URL (a role that may create databases), or why there is none.
    public static let server: Result<URLComponents, ServerMissing> = {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["TRACKEDMODELS_POSTGRES_URL"], let components = URLComponents(string: url) {
            return .success(components)
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../.ci/postgres").standardized.path
        let directory = FileManager.default.temporaryDirectory.appending(path: "trackedmodels-postgres-\(ProcessInfo.processInfo.processIdentifier)").path
        // popen, not Process: this runs while tests are being planned, where waiting for a
        // Process's exit may never return.
        let (status, printed) = shell("bash '\(script)' start '\(directory)' 2>&1")
        guard status == 0, let components = URLComponents(string: printed), components.scheme == "postgres" else {
            return .failure(ServerMissing(reason: "no PostgreSQL server could be started (\(printed)); set TRACKEDMODELS_POSTGRES_URL or install PostgreSQL (apt-get install postgresql)"))
        }
        stopAtExit = { _ = shell("bash '\(script)' stop '\(directory)'") }
        atexit { PostgresServer.stopAtExit?() }
        return .success(components)
    }()

    nonisolated(unsafe) private static var stopAtExit: (() -> Void)?

    /// Runs a shell command; its exit status and what it printed, trimmed. Through popen: a
    /// `Process` waited for from the main actor (or while tests are planned) may never return.
    public static func shell(_ command: String) -> (status: Int32, output: String) {
        guard let pipe = popen(command, "r") else { return (-1, "popen failed") }
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, pipe)
            if count == 0 { break }
            output.append(contentsOf: buffer[0..<count])
        }
        let status = pclose(pipe)
        return (status, String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    public struct ServerMissing: Error {
        public var reason: String
    }

    /// Whether the tests that need a server run: there is one, or CI requires it (and the test
    /// then fails, saying why).
    public static var isEnabled: Bool {
        if case .success = server { return true }
        return ProcessInfo.processInfo.environment["TRACKEDMODELS_REQUIRE_POSTGRES"] == "1"
    }

    /// A new, empty database; its URL.
    public static func makeDatabase() async throws -> String {
        let admin = try server.get()
        let name = "test_\(UUID().uuidString.prefix(8).lowercased())"
        try await psql(admin.string!, "CREATE DATABASE \(name)")
        var components = admin
        components.path = "/\(name)"
        return components.string!
    }

    /// The server's URL with other credentials, for tests of refused logins.
    public static func url(user: String, password: String) throws -> String {
        var components = try server.get()
        components.user = user
        components.password = password
        return components.string!
    }

    /// Runs SQL in `psql`, another process, and returns what it printed (unaligned, tuples only).
    @discardableResult
    public static func psql(_ url: String, _ sql: String) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let (printed, failure) = await onThreadOfItsOwn {
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            let failure = errors.fileHandleForReading.readDataToEndOfFile()
            // Closed now, not whenever Foundation lets go of the process (see `ModelCtlProcess`).
            try? output.fileHandleForReading.close()
            try? errors.fileHandleForReading.close()
            return (printed, failure)
        }
        guard await process.exitStatus() == 0 else {
            throw ServerMissing(reason: "psql failed on \(sql): \(String(decoding: failure, as: UTF8.self))")
        }
        return String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
