import Foundation
import PostgresTestSupport
import Testing

/// Every row and list, and the migration versions, of a demo database, as text.
private func contents(_ workspace: Workspace, _ database: String) async throws -> String {
    var text = ""
    for sql in ["SELECT id, title, count, list_id FROM rows ORDER BY id", "SELECT id, title FROM lists ORDER BY id", "SELECT version, name FROM trackedmodels_migrations ORDER BY version"] {
        let result = try await workspace.modelctl.run("query", sql, "--format", "csv", "--db", database)
        #expect(result.status == 0, "\(result.stderr)")
        text += result.stdout
    }
    return text
}

/// `modelctl copy`: the demo database moved between files and PostgreSQL databases exactly, all
/// or nothing, and every refusal clear and harmless.
struct CopyCommandTests {
    /// A workspace with a seeded demo file (`source.sqlite`) whose counters were bumped.
    private func seeded(rows: Int = 1_000) async throws -> Workspace {
        let workspace = try Workspace()
        let seed = try await workspace.modelctl.run("seed", "--rows", String(rows), "--db", "source.sqlite")
        #expect(seed.status == 0, "\(seed.stderr)")
        #expect(try await workspace.modelctl.run("bump", "42", "--times", "3", "--db", "source.sqlite").stdout == "3\n")
        #expect(try await workspace.modelctl.run("bump", "7", "--by", "-5", "--db", "source.sqlite").stdout == "-5\n")
        return workspace
    }

    /// A file's bytes, with its WAL's: what a failed command must leave as they were.
    private func bytes(_ path: String) -> [Data?] {
        ["", "-wal"].map { FileManager.default.contents(atPath: path + $0) }
    }

    @Test func aFileCopiesToAnotherFileExactlyAndAgainOnlyWithReplace() async throws {
        let workspace = try await seeded()
        let source = workspace.modelctl.path("source.sqlite")
        let before = bytes(source)
        let copy = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "target.sqlite")
        #expect(copy.status == 0, "\(copy.stderr)")
        #expect(copy.stdout.contains("applied 0004_lists.sql\n"))
        #expect(copy.stdout.contains("copied 10 rows of lists, checksum "))
        #expect(copy.stdout.contains("copied 1000 rows of rows, checksum "))
        #expect(try await contents(workspace, "target.sqlite") == contents(workspace, "source.sqlite"))
        #expect(bytes(source) == before, "the copy changed its source")
        let mark = try await workspace.modelctl.run("query", "PRAGMA application_id", "--format", "csv", "--db", "target.sqlite")
        #expect(mark.stdout == "application_id\r\n1297040451\r\n")
        // The copy goes on where the source was.
        #expect(try await workspace.modelctl.run("bump", "42", "--db", "target.sqlite").stdout == "4\n")

        // Again: refused, naming the way out, and nothing changes.
        let target = workspace.modelctl.path("target.sqlite")
        let copied = bytes(target)
        let again = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "target.sqlite")
        #expect(again.status == 65)
        #expect(again.stdout.isEmpty)
        #expect(again.stderr.contains("table lists of the target target.sqlite already holds 10 rows; nothing was copied. Replace them (--replace"), "\(again.stderr)")
        #expect(bytes(target) == copied)

        let replaced = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "target.sqlite", "--replace")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(!replaced.stdout.contains("applied"))
        #expect(try await contents(workspace, "target.sqlite") == contents(workspace, "source.sqlite"))
    }

    @Test func refusalsAreClearAndLeaveTheTargetAsItWas() async throws {
        let workspace = try await seeded(rows: 100)
        // No source: nothing is made.
        let missing = try await workspace.modelctl.run("copy", "--from", "nothing.sqlite", "--to", "target.sqlite")
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("copy from nothing.sqlite: there is no such database"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.modelctl.path("target.sqlite")))

        // Onto itself, through another name for the same file.
        try FileManager.default.createSymbolicLink(atPath: workspace.modelctl.path("alias.sqlite"), withDestinationPath: workspace.modelctl.path("source.sqlite"))
        let itself = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "alias.sqlite", "--replace")
        #expect(itself.status == 64)
        #expect(itself.stderr.contains("the source and the target are the same database"), "\(itself.stderr)")
        #expect(try await contents(workspace, "source.sqlite").contains("42,Row 42,3,3"))

        // A target whose schema differs from the models: every difference named, exit 78.
        #expect(try await workspace.modelctl.run("migrate", "up", "--db", "renamed.sqlite").status == 0)
        #expect(try await ModelCtlProcess.sqlite3(workspace.modelctl.path("renamed.sqlite"), "ALTER TABLE lists RENAME COLUMN title TO name") == 0)
        let renamed = bytes(workspace.modelctl.path("renamed.sqlite"))
        let differs = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "renamed.sqlite")
        #expect(differs.status == 78)
        #expect(differs.stderr.contains("the target renamed.sqlite does not match the models (1 difference)"), "\(differs.stderr)")
        #expect(differs.stderr.contains("lists.title: column is missing"), "\(differs.stderr)")
        #expect(bytes(workspace.modelctl.path("renamed.sqlite")) == renamed)

        // A source behind the migrations: migrate it first.
        #expect(try await workspace.modelctl.run("migrate", "up", "--to", "3", "--db", "old.sqlite").status == 0)
        let behind = try await workspace.modelctl.run("copy", "--from", "old.sqlite", "--to", "target.sqlite")
        #expect(behind.status == 78)
        #expect(behind.stderr.contains("is at version 3 (3 application_id), and the target's migrations end at version 4 (4 lists); migrate the source first"), "\(behind.stderr)")
        #expect(!FileManager.default.fileExists(atPath: workspace.modelctl.path("target.sqlite")))

        // A target that belongs to another application.
        #expect(try await ModelCtlProcess.sqlite3(workspace.modelctl.path("foreign.sqlite"), "PRAGMA application_id = 7; CREATE TABLE notes (x)") == 0)
        let foreign = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "foreign.sqlite")
        #expect(foreign.status == 78)
        #expect(foreign.stderr.contains("belongs to another application"), "\(foreign.stderr)")
    }

    /// A row the target cannot hold (here: text that is not UTF-8, written behind the store's
    /// back) stops the copy before it commits anything, naming the row; a target the copy made
    /// is removed again.
    @Test func aValueTheModelsCannotReadStopsTheWholeCopy() async throws {
        let workspace = try await seeded(rows: 2_500)
        #expect(try await ModelCtlProcess.sqlite3(workspace.modelctl.path("source.sqlite"), "UPDATE rows SET title = CAST(x'526f7720ff' AS TEXT) WHERE id = 2400") == 0)
        let copy = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", "target.sqlite")
        #expect(copy.status == 65)
        #expect(copy.stderr.contains("row 2400 of table rows holds text in column title that is not valid UTF-8; nothing was copied"), "\(copy.stderr)")
        for suffix in ["", "-wal", "-shm", "-journal"] {
            #expect(!FileManager.default.fileExists(atPath: workspace.modelctl.path("target.sqlite" + suffix)), "target.sqlite\(suffix) was left")
        }
    }

    @Test func copyingTenTimesTheRowsTakesNoMoreMemory() async throws {
        let workspace = try Workspace()
        for rows in [40_000, 400_000] {
            #expect(try await workspace.modelctl.run("seed", "--rows", String(rows), "--db", "seed-\(rows).sqlite").status == 0)
        }
        let small = try await workspace.modelctl.peakMemory(["copy", "--from", "seed-40000.sqlite", "--to", "copy-40000.sqlite"])
        let large = try await workspace.modelctl.peakMemory(["copy", "--from", "seed-400000.sqlite", "--to", "copy-400000.sqlite"])
        #expect(small > 0 && large > 0, "the kernel reported no peak memory")
        // Rows held in memory would take some 100 bytes each: 36 MB more for the larger copy.
        // Streamed, the peaks stay within a few MB of each other.
        #expect(large - small < 12_000, "copying 400,000 rows peaked at \(large) kB, 40,000 at \(small) kB")
        let count = try await workspace.modelctl.run("query", "SELECT count(*) FROM rows", "--format", "csv", "--db", "copy-400000.sqlite")
        #expect(count.stdout == "count(*)\r\n400000\r\n")
    }

    @Test(arguments: [(Int32(SIGINT), Int32(130)), (Int32(SIGTERM), Int32(143))])
    func aSignalRollsTheCopyBack(_ signal: Int32, _ status: Int32) async throws {
        let workspace = try await seeded(rows: 400_000)
        let target = workspace.modelctl.path("target.sqlite")
        let process = try workspace.modelctl.start(["copy", "--from", "source.sqlite", "--to", "target.sqlite"])
        // Signalled once the copy is writing rows (its WAL past 4 MB).
        let signalled = await ModelCtlProcess.signal(process, signal, when: { ModelCtlProcess.size(target + "-wal") >= 4 << 20 })
        #expect(signalled.wasRunning, "the copy ended before it could be signalled")
        #expect(await process.exitStatus() == status)
        #expect(!FileManager.default.fileExists(atPath: target), "the interrupted copy left the file it made")
    }
}

/// `modelctl copy` to and from PostgreSQL.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresCopyCommandTests {
    @Test func theDemoDatabaseRoundTripsThroughPostgreSQLExactly() async throws {
        let workspace = try Workspace()
        #expect(try await workspace.modelctl.run("seed", "--rows", "3000", "--db", "source.sqlite").status == 0)
        #expect(try await workspace.modelctl.run("bump", "42", "--times", "3", "--db", "source.sqlite").stdout == "3\n")
        #expect(try await workspace.modelctl.run("bump", "2999", "--by", "-9", "--db", "source.sqlite").stdout == "-9\n")
        let url = try await PostgresServer.makeDatabase()

        let there = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", url)
        #expect(there.status == 0, "\(there.stderr)")
        #expect(there.stdout.contains("copied 3000 rows of rows"))
        #expect(!there.stdout.contains(":tracked@"), "the password was printed")
        let back = try await workspace.modelctl.run("copy", "--from", url, "--to", "back.sqlite")
        #expect(back.status == 0, "\(back.stderr)")
        // The same rows, lists and versions everywhere, and the same checksums both ways.
        let original = try await contents(workspace, "source.sqlite")
        #expect(try await contents(workspace, url) == original)
        #expect(try await contents(workspace, "back.sqlite") == original)
        let checksums = { (output: String) in output.split(separator: "\n").filter { $0.hasPrefix("copied") && $0.contains("checksum") } }
        #expect(checksums(there.stdout) == checksums(back.stdout))
        // Bumps on the PostgreSQL copy go on from the copied counters.
        #expect(try await workspace.modelctl.run("bump", "42", "--times", "2", "--db", url).stdout == "5\n")
        #expect(try await workspace.modelctl.run("migrate", "verify", "--db", url).status == 0)

        // Refused onto itself, and onto a database with rows; with --replace, replaced.
        let itself = try await workspace.modelctl.run("copy", "--from", url, "--to", url, "--replace")
        #expect(itself.status == 64, "\(itself.stderr)")
        let before = try await contents(workspace, url)
        let full = try await workspace.modelctl.run("copy", "--from", "back.sqlite", "--to", url)
        #expect(full.status == 65)
        #expect(full.stderr.contains("already holds 10 rows"), "\(full.stderr)")
        #expect(try await contents(workspace, url) == before)
        let replaced = try await workspace.modelctl.run("copy", "--from", "back.sqlite", "--to", url, "--replace")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try await contents(workspace, url) == original)
    }

    @Test func wrongURLsAndForeignSchemasAreRefusedAndChangeNothing() async throws {
        let workspace = try Workspace()
        #expect(try await workspace.modelctl.run("seed", "--rows", "100", "--db", "source.sqlite").status == 0)
        let url = try await PostgresServer.makeDatabase()
        var components = try #require(URLComponents(string: url))

        var wrongPassword = components
        wrongPassword.password = "wrong"
        let denied = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", wrongPassword.string!)
        #expect(denied.status == 77, "\(denied.stderr)")
        #expect(!denied.stderr.contains("wrong"), "the password was printed: \(denied.stderr)")

        var noDatabase = components
        noDatabase.path = "/no_such_database"
        let missing = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", noDatabase.string!)
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.contains("no_such_database"), "\(missing.stderr)")

        components.port = 1
        let unreachable = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", components.string!)
        #expect(unreachable.status == 69, "\(unreachable.stderr)")

        // A target whose table differs from the models: refused, the database as it was.
        #expect(try await workspace.modelctl.run("migrate", "up", "--db", url).status == 0)
        try await PostgresServer.psql(url, "ALTER TABLE lists ALTER COLUMN title TYPE integer USING 0")
        let tables = "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'"
        let before = try await PostgresServer.psql(url, tables)
        let differs = try await workspace.modelctl.run("copy", "--from", "source.sqlite", "--to", url)
        #expect(differs.status == 78, "\(differs.stderr)")
        #expect(differs.stderr.contains("does not match the models (1 difference)"), "\(differs.stderr)")
        #expect(differs.stderr.contains("lists.title: declared integer but the model stores TEXT"), "\(differs.stderr)")
        #expect(try await PostgresServer.psql(url, tables) == before)
        #expect(try await PostgresServer.psql(url, "SELECT count(*) FROM rows") == "0")
    }
}
