import Foundation
import PostgresTestSupport
import Testing

/// Issue 28: `modelctl watch` in one process hears each way another process (`sqlite3`, `psql`)
/// changes the rows: as the exact rows, or as a reset of the table where the store cannot know
/// which (its change log's trigger dropped, a `TRUNCATE`).
@Suite struct WatchEveryChangeTests {
    enum Engine: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// A change another process commits, and the events it must print: "table key kind", in
    /// any order within the change.
    struct Change {
        var sql: String
        var events: Set<String>
    }

    private static func changes(_ engine: Engine) -> [Change] {
        switch engine {
        case .sqlite:
            [
                // Deletes row 3, which holds the title, without a delete trigger firing.
                Change(sql: "INSERT OR REPLACE INTO rows (id, title, count) VALUES (1000, 'Row 3', 7)", events: ["rows 3 delete", "rows 1000 insert"]),
                Change(sql: "UPDATE OR REPLACE rows SET title = 'Row 4' WHERE id = 5", events: ["rows 4 delete", "rows 5 update"]),
                Change(sql: "INSERT INTO rows (id, title, count) VALUES (6, 'Row 6', 0) ON CONFLICT (id) DO UPDATE SET count = 9", events: ["rows 6 update"]),
                // The foreign key's ON DELETE SET NULL, with foreign keys on.
                Change(sql: "PRAGMA foreign_keys = ON; DELETE FROM lists WHERE id = 1", events: ["rows 0 update", "rows 10 update"]),
                Change(sql: "DROP TRIGGER trackedmodels_rows_update_v2; UPDATE rows SET count = 5 WHERE id = 7", events: ["rows  reset"]),
                // Heard row by row again once the trigger is back.
                Change(sql: "UPDATE rows SET count = 8 WHERE id = 8", events: ["rows 8 update"]),
            ]
        case .postgres:
            [
                Change(sql: "INSERT INTO rows (id, title, count) VALUES (6, 'Row 6', 0) ON CONFLICT (id) DO UPDATE SET count = 9", events: ["rows 6 update"]),
                Change(sql: "DELETE FROM lists WHERE id = 1", events: ["rows 0 update", "rows 10 update"]),
                Change(sql: "DROP TRIGGER trackedmodels_rows_v1 ON rows; UPDATE rows SET count = 5 WHERE id = 7", events: ["rows  reset"]),
                Change(sql: "UPDATE rows SET count = 8 WHERE id = 8", events: ["rows 8 update"]),
                Change(sql: "TRUNCATE rows", events: ["rows  reset"]),
            ]
        }
    }

    @Test(arguments: Engine.allCases)
    func aWatchHearsEachWayAnotherProcessChangesRows(_ engine: Engine) async throws {
        let workspace = try Workspace()
        let database: String
        switch engine {
        case .sqlite:
            database = workspace.modelctl.path("model.sqlite")
        case .postgres:
            guard PostgresServer.isEnabled else { try Test.cancel("no PostgreSQL server") }
            database = try await PostgresServer.makeDatabase()
        }
        func shell(_ sql: String) async throws {
            switch engine {
            case .sqlite: #expect(try await ModelCtlProcess.sqlite3(database, sql) == 0, "sqlite3 failed on \(sql)")
            case .postgres: try await PostgresServer.psql(database, sql)
            }
        }
        #expect(try await workspace.modelctl.run("seed", "--rows", "20", "--db", database).status == 0)
        // A unique title: a REPLACE that inserts a taken title deletes the row that held it.
        if engine == .sqlite { try await shell("CREATE UNIQUE INDEX rows_by_title ON rows (title)") }
        let changes = Self.changes(engine)
        let output = Pipe()
        let errors = Pipe()
        let count = changes.map(\.events.count).reduce(0, +)
        let watch = try workspace.modelctl.start(["watch", "--db", database, "--count", String(count), "--timeout", "60"], stdout: output, stderr: errors)
        // Once it says it is watching, no later commit slips by.
        let said = await onThreadOfItsOwn { errors.fileHandleForReading.availableData }
        #expect(String(decoding: said, as: UTF8.self).hasPrefix("watching "))
        var pending = ""
        for change in changes {
            try await shell(change.sql)
            // Each line "rows 3 delete (external): …", taken up to its origin.
            var heard: [String] = []
            while heard.count < change.events.count {
                while !pending.contains("\n") {
                    let chunk = await onThreadOfItsOwn { output.fileHandleForReading.availableData }
                    guard !chunk.isEmpty else { break }
                    pending += String(decoding: chunk, as: UTF8.self)
                }
                guard let end = pending.firstIndex(of: "\n") else { break }
                let line = String(pending[..<end])
                pending.removeSubrange(...end)
                heard.append(line.components(separatedBy: " (").first ?? line)
            }
            #expect(Set(heard) == change.events, "after \(change.sql)")
            #expect(heard.count == change.events.count, "after \(change.sql): \(heard)")
        }
        #expect(await watch.exitStatus() == 0)
    }
}
