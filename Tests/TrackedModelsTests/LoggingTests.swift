import Foundation
import InMemoryLogging
import Logging
import Testing
@testable import TrackedModels

/// A logger whose entries the test reads back (swift-log's in-memory handler; nothing is
/// bootstrapped).
struct LogRecorder {
    private let handler = InMemoryLogHandler()

    var logger: Logger {
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .trace
        return logger
    }

    func records(at level: Logger.Level) -> [(message: String, metadata: [String: String])] {
        handler.entries.filter { $0.level == level }.map { ($0.message.description, $0.metadata.mapValues { "\($0)" }) }
    }
}

@MainActor
@Suite struct LoggingTests {
    @Test func aRefusedChangeIsAWarningNamingTheFileTableAndRow() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        try Peek(path).execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL CHECK (count < 100))")
        let recorder = LogRecorder()
        var configuration = Stores.configuration()
        configuration.logger = recorder.logger
        let store = try await Stores.rows(2, at: .file(path), configuration: configuration)
        try #require(try store.find(Row.self, key: 1)).count = 500
        await #expect(throws: StoreError.self) { try await store.flush() }
        let warning = try #require(recorder.records(at: .warning).first)
        #expect(warning.message.contains("refused"))
        #expect(warning.metadata["file"] == path)
        #expect(warning.metadata["table"] == "rows")
        #expect(warning.metadata["row"] == "1")
        #expect(warning.metadata["change"] == "update rows 1: count = 500 (integer)")
    }

    @Test func busyRetriesAndFailedCommitsAreLogged() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        let recorder = LogRecorder()
        var configuration = Stores.configuration()
        configuration.logger = recorder.logger
        configuration.busyTimeout = .milliseconds(10)
        configuration.maxBusyRetries = 1
        let store = try await Stores.rows(1, at: .file(path), configuration: configuration)
        let locker = try Peek(path)
        try locker.execute("BEGIN IMMEDIATE")
        try #require(try store.find(Row.self, key: 0)).count = 4
        await #expect(throws: StoreError.self) { try await store.flush() }
        try locker.execute("COMMIT")
        #expect(recorder.records(at: .debug).contains { $0.message.contains("busy") && $0.metadata["attempt"] == "1" })
        #expect(recorder.records(at: .warning).contains { $0.message.contains("commit failed") && $0.metadata["file"] == path })
    }

    @Test func resetsAndPruningAreLogged() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("model.sqlite")
        let recorder = LogRecorder()
        var quiet = Stores.configuration()
        quiet.externalChangePollInterval = .seconds(3_600)
        quiet.wakesOnFileChanges = false
        quiet.logger = recorder.logger
        let store = try await Stores.rows(3, at: .file(path), configuration: quiet)
        var pruning = Stores.configuration()
        pruning.changeLogRetention = 5
        pruning.logger = recorder.logger
        let other = try ModelStore(.file(path), models: [Row.self], configuration: pruning)
        let row = try #require(try other.find(Row.self, key: 1))
        for round in 1...30 {
            row.title = "round \(round)"
            try await other.flush()
        }
        try await store.refreshExternalChanges()
        #expect(recorder.records(at: .notice).contains { $0.message.contains("known only as a whole") && $0.metadata["table"] == "rows" })
        #expect(recorder.records(at: .debug).contains { $0.message.contains("pruned the change log") })
        try await other.close()
    }
}
