import Foundation
import PostgresTestSupport
import Testing

/// `modelctl --db postgres://...` (and `$MODELCTL_DB`): seed, bump, query, watch and migrate
/// against a PostgreSQL database, and bad URLs, servers and databases refused clearly.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresCommandTests {
    /// The database's tables and rows, to compare before and after a command that must fail.
    private func contents(_ url: String) async throws -> String {
        try await PostgresServer.psql(url, """
            SELECT coalesce(string_agg(tablename, ',' ORDER BY tablename), '') FROM pg_tables WHERE schemaname = 'public';
            SELECT coalesce(string_agg(id || ':' || title || ':' || count, ',' ORDER BY id), '') FROM rows
            """)
    }

    @Test func seedBumpQueryAndMigrateThroughTheEnvironment() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        let seed = try await workspace.modelctl.runShell("MODELCTL_DB='\(url)' \"$MODELCTL\" seed --rows 100")
        #expect(seed.status == 0, "\(seed.stderr)")
        #expect(seed.stdout.hasPrefix("seeded 100 rows in 10 lists into postgres://"))
        // The password is never printed.
        #expect(!seed.stdout.contains(":tracked@"))
        #expect(try await PostgresServer.psql(url, "SELECT count(*), count(DISTINCT list_id) FROM rows") == "100|10")

        let bump = try await workspace.modelctl.run("bump", "42", "--by", "3", "--times", "4", "--db", url)
        #expect(bump.stdout == "12\n", "\(bump.stderr)")
        #expect(try await PostgresServer.psql(url, "SELECT count FROM rows WHERE id = 42") == "12")

        let query = try await workspace.modelctl.run("query", "--db", url, "--where", "count > 0", "--format", "csv")
        #expect(query.stdout == "id,title,count,list_id\r\n42,Row 42,12,3\r\n", "\(query.stderr)")
        let total = try await workspace.modelctl.run("query", "--db", url, "SELECT count(*) AS total FROM rows", "--format", "json")
        #expect(total.stdout.contains(#""total": 100"#), "\(total.stdout)\(total.stderr)")

        let status = try await workspace.modelctl.run("migrate", "status", "--db", url)
        #expect(status.stdout.contains("version 4 of 4"), "\(status.stderr)")
        // The demo migrations built in are the repository's Schemas/postgres files.
        let verify = try await workspace.modelctl.run("migrate", "verify", "--db", url, "--schemas", ModelCtlProcess.repositorySchemas)
        #expect(verify.stdout == "in sync with migrations from \(ModelCtlProcess.repositorySchemas)/postgres/: 4 applied, 0 pending\n", "\(verify.stderr)")
        // The PostgreSQL folder named itself is the same set.
        let named = try await workspace.modelctl.run("migrate", "verify", "--db", url, "--schemas", ModelCtlProcess.repositorySchemas + "/postgres")
        #expect(named.stdout.hasSuffix(": 4 applied, 0 pending\n"), "\(named.stderr)")
        // A password in the URL's options is not printed either.
        var components = try #require(URLComponents(string: url))
        let password = components.password
        components.password = nil
        components.queryItems = [URLQueryItem(name: "password", value: password)]
        let optioned = try await workspace.modelctl.run("bump", "99999", "--db", components.string!)
        #expect(optioned.status == 65)
        #expect(optioned.stderr.contains("password=…"), "\(optioned.stderr)")
        #expect(!optioned.stderr.contains("password=\(password ?? "")"))

        let again = try await workspace.modelctl.run("seed", "--db", url)
        #expect(again.status == 65)
        #expect(again.stderr.contains("table rows already has 100 rows; pass --reset"))
        #expect(try await workspace.modelctl.run("seed", "--db", url, "--rows", "5", "--reset").status == 0)
        #expect(try await PostgresServer.psql(url, "SELECT count(*), sum(count) FROM rows") == "5|0")
    }

    @Test func watchHearsAnotherProcesssBump() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        #expect(try await workspace.modelctl.run("seed", "--rows", "50", "--db", url).status == 0)
        let output = Pipe()
        let errors = Pipe()
        // It ends at its first event; the timeout only bounds a hang (a loaded machine can take
        // seconds to start each modelctl process).
        let watch = try workspace.modelctl.start(["watch", "--db", url, "--row", "7", "--format", "json", "--count", "1", "--timeout", "120"], stdout: output, stderr: errors)
        // Once it says it is watching, no later commit slips by.
        let said = await onThreadOfItsOwn { errors.fileHandleForReading.availableData }
        #expect(String(decoding: said, as: UTF8.self).hasPrefix("watching postgres://"))
        #expect(try await workspace.modelctl.run("bump", "8", "--db", url).status == 0)
        #expect(try await workspace.modelctl.run("bump", "7", "--by", "5", "--db", url).status == 0)
        let printed = await onThreadOfItsOwn { output.fileHandleForReading.readDataToEndOfFile() }
        #expect(await watch.exitStatus() == 0)
        #expect(String(decoding: printed, as: UTF8.self) == #"{"table": "rows", "row": 7, "kind": "update", "origin": "external", "columns": {"count": {"old": 0, "new": 5}}}"# + "\n")
    }

    @Test func twoBumpProcessesInParallelLoseNothing() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        #expect(try await workspace.modelctl.run("seed", "--rows", "10", "--db", url).status == 0)
        func bumps() async throws {
            for _ in 0..<10 {
                let output = try await workspace.modelctl.run("bump", "7", "--by", "2", "--times", "2", "--db", url)
                #expect(output.status == 0, "\(output.stderr)")
            }
        }
        async let first: Void = bumps()
        async let second: Void = bumps()
        _ = try await (first, second)
        #expect(try await PostgresServer.psql(url, "SELECT count FROM rows WHERE id = 7") == "80")
    }

    @Test func aFailingMigrationRollsBackWhole() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        let schemas = try workspace.copySchemas()
        #expect(try await workspace.modelctl.run("migrate", "up", "--db", url, "--schemas", schemas).status == 0)
        // A body holding a semicolon (dollar-quoted) splits as one statement; the last fails.
        try """
            CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT);
            CREATE FUNCTION note_count() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM notes; $$;
            INSERT INTO missing_table VALUES (1);
            """.write(toFile: schemas + "/postgres/0005_notes.sql", atomically: true, encoding: .utf8)
        let before = try await contents(url)
        let up = try await workspace.modelctl.run("migrate", "up", "--db", url, "--schemas", schemas)
        #expect(up.status == 65)
        #expect(up.stderr.contains("migration 0005_notes.sql failed at statement `INSERT INTO missing_table VALUES (1);`"), "\(up.stderr)")
        #expect(up.stderr.contains("the database stays at version 4"))
        #expect(try await contents(url) == before)
        #expect(try await PostgresServer.psql(url, "SELECT max(version) FROM trackedmodels_migrations") == "4")
    }

    @Test func badURLsServersAndDatabasesAreRefusedClearly() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        let server = try #require(URLComponents(string: url))
        var unreachable = server
        unreachable.port = 1
        let refused = try await workspace.modelctl.run("query", "--db", unreachable.string!)
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("was lost or refused"))
        #expect(refused.stderr.contains("127.0.0.1:1/"))
        #expect(!refused.stderr.contains("tries again"))

        let credentials = try await workspace.modelctl.run("bump", "1", "--db", try PostgresServer.url(user: "tracked", password: "wrong"))
        #expect(credentials.status == 77)
        #expect(credentials.stderr.contains("refused the credentials"))
        #expect(!credentials.stderr.contains("wrong"), "the password is never printed")

        var missing = server
        missing.path = "/no_such_database"
        let noDatabase = try await workspace.modelctl.run("watch", "--db", missing.string!)
        #expect(noDatabase.status == 66)
        #expect(noDatabase.stderr.contains("has no such database"))

        let malformed = try await workspace.modelctl.run("seed", "--db", "postgres://tracked@127.0.0.1:99999/x")
        #expect(malformed.status == 66)
        #expect(malformed.stderr.contains("port 99999 is out of range"))

        // A database of another application: refused, and left as it was.
        try await PostgresServer.psql(url, "CREATE TABLE rows (id BIGINT PRIMARY KEY, title TEXT, count BIGINT); INSERT INTO rows VALUES (1, 'theirs', 0); COMMENT ON TABLE rows IS 'their ledger'")
        let before = try await contents(url)
        for command in [["seed", "--reset"], ["bump", "1"], ["migrate", "up"]] {
            let output = try await workspace.modelctl.run(command + ["--db", url])
            #expect(output.status != 0, "\(command)")
        }
        let foreign = try await workspace.modelctl.run("bump", "1", "--db", url)
        #expect(foreign.status == 78)
        #expect(foreign.stderr.contains("belongs to another application"))
        #expect(try await contents(url) == before)

        // SQL that writes is refused by the server, and changes nothing.
        let demo = try await PostgresServer.makeDatabase()
        #expect(try await workspace.modelctl.run("seed", "--rows", "3", "--db", demo).status == 0)
        let contentsBefore = try await contents(demo)
        try await PostgresServer.psql(demo, "CREATE SEQUENCE ticket")
        for sql in ["DELETE FROM rows", "SELECT 1; DELETE FROM rows", "SELECT nextval('ticket')", "UPDATE rows SET count = 1 RETURNING id"] {
            let output = try await workspace.modelctl.run("query", "--db", demo, sql)
            #expect(output.status != 0, "\(sql)")
        }
        #expect(try await PostgresServer.psql(demo, "SELECT is_called FROM ticket") == "f")
        #expect(try await workspace.modelctl.run("query", "--db", demo, "DELETE FROM rows").status == 64)
        #expect(try await contents(demo) == contentsBefore)

        let check = try await workspace.modelctl.run("check", "--db", demo)
        #expect(check.status == 64)
    }
}
