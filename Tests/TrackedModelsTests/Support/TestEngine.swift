import Foundation
import PostgresTestSupport
import Testing
@testable import TrackedModels

/// The engines a contract test runs against, as its argument: the same test, a SQLite file or
/// a PostgreSQL database of its own.
enum TestEngine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// A new, empty database: a file in `directory`, or a database on the test server. Its
    /// location as the helper process takes it (a path or a URL).
    ///
    /// Without a PostgreSQL server (none installed, and CI does not require one), the
    /// PostgreSQL case is cancelled, saying why.
    func makeDatabase(in directory: TemporaryDirectory) async throws -> String {
        switch self {
        case .sqlite:
            return directory.path("model.sqlite")
        case .postgres:
            if case .failure(let missing) = PostgresServer.server, ProcessInfo.processInfo.environment["TRACKEDMODELS_REQUIRE_POSTGRES"] != "1" {
                try Test.cancel("\(missing.reason)")
            }
            return try await PostgresServer.makeDatabase()
        }
    }

    /// The location of a database ``makeDatabase(in:)`` made.
    func location(_ database: String) -> DatabaseLocation {
        switch self {
        case .sqlite: .file(database)
        case .postgres: .postgres(database)
        }
    }

    /// Opens a store on the database.
    @MainActor
    func open(_ database: String, models: [any TrackedModel.Type] = [Row.self], configuration: ModelStore.Configuration = Stores.configuration()) async throws -> ModelStore {
        try await ModelStore.open(location(database), models: models, configuration: configuration)
    }

    /// Runs SQL in another process (`sqlite3` or `psql`) and returns what it printed: a query's
    /// rows one per line, columns separated by `|`.
    @discardableResult
    func sql(_ database: String, _ sql: String) async throws -> String {
        switch self {
        case .sqlite:
            // Waiting up to 5 s for a lock the store holds, as the store waits for others'.
            let process = try Helper.start(["-cmd", ".timeout 5000", database, sql], executable: Helper.sqlite3)
            let output = await onThreadOfItsOwn { (process.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile() }
            #expect(await process.exitStatus() == 0, "sqlite3 failed on \(sql)")
            return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        case .postgres:
            return try await PostgresServer.psql(database, sql)
        }
    }

    /// Runs SQL in another process and waits for it, blocking the calling thread: for a hook
    /// that runs on the store's database queue, which cannot await.
    func sqlBlocking(_ database: String, _ sql: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = self == .sqlite ? ["sqlite3", "-cmd", ".timeout 5000", database, sql] : ["psql", database, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            Issue.record("\(self) could not run \(sql): \(error)")
        }
    }
}
