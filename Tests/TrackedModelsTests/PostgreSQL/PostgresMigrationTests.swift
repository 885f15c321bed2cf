import Foundation
import PostgresTestSupport
import Testing
@testable import TrackedModels

/// Migrations on PostgreSQL: split as PostgreSQL reads SQL, each in one transaction (its DDL
/// too), recorded with the same checksums, one migrator at a time, and never another engine's.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresMigrationTests {
    private static let migrations = [
        Migration(version: 1, name: "create_notes", sql: "CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL DEFAULT 'a;b');\n"),
        Migration(version: 2, name: "note_count", sql: """
            -- A function body holds semicolons; it is one statement.
            CREATE FUNCTION note_count() RETURNS bigint LANGUAGE plpgsql AS $body$
            BEGIN
                RETURN (SELECT count(*) FROM notes);
            END;
            $body$;
            INSERT INTO notes (id, body) VALUES (1, E'it\\'s; fine'), (2, 'x''; y'); /* a /* nested */ comment; */
            """),
    ]

    @Test func migrationsApplyOnceAndAreRecordedWithTheirChecksums() async throws {
        let url = try await PostgresServer.makeDatabase()
        let migrator = try SchemaMigrator(Self.migrations, dialect: .postgres)
        #expect(try await migrator.plan(for: .postgres(url)).map(\.version) == [1, 2])
        // Two migrators at once: one applies each migration, the other waits and finds it done.
        async let first = migrator.migrate(.postgres(url))
        async let second = migrator.migrate(.postgres(url))
        let applied = try await first.count + second.count
        #expect(applied == 2)
        #expect(try await PostgresServer.psql(url, "SELECT note_count(), string_agg(body, '|' ORDER BY id) FROM notes") == "2|it's; fine|x'; y")
        let status = try await migrator.status(of: .postgres(url))
        #expect(status.currentVersion == 2)
        #expect(status.drift.isEmpty)
        #expect(status.applied.map(\.checksum) == Self.migrations.map(\.checksum))

        let edited = try SchemaMigrator([Self.migrations[0], Migration(version: 2, name: "note_count", sql: "SELECT 1;")], dialect: .postgres)
        await #expect { try await edited.migrate(.postgres(url)) } throws: { ($0 as? MigrationError)?.code == .checksumMismatch }
    }

    /// Found by review: a migration that changed `search_path` (kept by the session) made the
    /// next look for the record find an empty one elsewhere, and migrations ran again.
    @Test func aMigrationThatChangesSearchPathDoesNotHideWhatWasApplied() async throws {
        let url = try await PostgresServer.makeDatabase()
        let migrator = try SchemaMigrator([
            Migration(version: 1, name: "app_schema", sql: "CREATE SCHEMA app; SET search_path TO app, public;\n"),
            Migration(version: 2, name: "items", sql: "CREATE TABLE items (id BIGINT PRIMARY KEY);\n"),
        ], dialect: .postgres)
        #expect(try await migrator.migrate(.postgres(url)).map(\.version) == [1, 2])
        // Migration 2 ran with the session's defaults: its table is in public, beside the record.
        #expect(try await PostgresServer.psql(url, "SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename IN ('items', 'trackedmodels_migrations')")
            == "public.items,public.trackedmodels_migrations")
        // A schema named as the user, first on the default search_path, appears later.
        try await PostgresServer.psql(url, "CREATE SCHEMA tracked")
        #expect(try await migrator.migrate(.postgres(url)).isEmpty)
        #expect(try await migrator.status(of: .postgres(url)).currentVersion == 2)
    }

    @Test func anotherEnginesMigrationsAreRefusedBeforeAnythingRuns() async throws {
        let url = try await PostgresServer.makeDatabase()
        let sqlite = try SchemaMigrator([Migration(version: 1, name: "create", sql: "CREATE TABLE t (x INTEGER) STRICT;")])
        await #expect { try await sqlite.migrate(.postgres(url)) } throws: { ($0 as? MigrationError)?.code == .wrongDialect }
        let postgres = try SchemaMigrator(Self.migrations, dialect: .postgres)
        await #expect { try await postgres.migrate(.file(FileManager.default.temporaryDirectory.appending(path: "\(UUID()).sqlite").path)) } throws: {
            ($0 as? MigrationError)?.code == .wrongDialect
        }
        #expect(try await PostgresServer.psql(url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == "0")
    }

    @Test(arguments: [
        "CREATE INDEX CONCURRENTLY notes_by_body ON notes (body);",
        "create unique index concurrently x on notes (id);",
        "DROP DATABASE other;",
        "ALTER SYSTEM SET work_mem = '1MB';",
        "COMMIT;",
        "START TRANSACTION;",
        "VACUUM notes;",
        "PREPARE TRANSACTION 'x';",
        "REINDEX DATABASE app;",
        "DISCARD ALL;",
        "CREATE TABLESPACE t LOCATION '/tmp';",
        // PostgreSQL's comments nest: the statement is COMMIT.
        "/* a /* b */ c */ COMMIT;",
    ])
    func statementsThatCannotRunInAMigrationsTransactionAreRefused(_ statement: String) throws {
        #expect { try SchemaMigrator([Migration(version: 1, name: "bad", sql: "SELECT 1;\n" + statement)], dialect: .postgres) } throws: {
            ($0 as? MigrationError)?.code == .refusedStatement
        }
    }

    @Test func sqlSplitsAsPostgreSQLReadsIt() {
        #expect(PostgreSQLText.statements(in: "SELECT 1; SELECT ';'; -- only a comment;\n/* and; another */") == ["SELECT 1;", "SELECT ';';"])
        #expect(PostgreSQLText.statements(in: #"SELECT E'\';'; SELECT "a;b" FROM t"#) == [#"SELECT E'\';';"#, #"SELECT "a;b" FROM t"#])
        #expect(PostgreSQLText.statements(in: "SELECT $$a;$$, $x$ $$; $x$; SELECT $1") == ["SELECT $$a;$$, $x$ $$; $x$;", "SELECT $1"])
        #expect(PostgreSQLText.statements(in: "SELECT 1 /* a /* b; */ c; */; SELECT 2;") == ["SELECT 1 /* a /* b; */ c; */;", "SELECT 2;"])
        // A routine's BEGIN ATOMIC body, and CASE ... END in it; parentheses (a rule's actions).
        #expect(PostgreSQLText.statements(in: "CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN x > 0 THEN 1 END; END; SELECT 2;")
            == ["CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN x > 0 THEN 1 END; END;", "SELECT 2;"])
        #expect(PostgreSQLText.statements(in: "CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES (1); INSERT INTO b VALUES (2)); SELECT 3")
            == ["CREATE RULE r AS ON INSERT TO t DO ALSO (INSERT INTO a VALUES (1); INSERT INTO b VALUES (2));", "SELECT 3"])
        #expect(PostgreSQLText.statements(in: "SELECT a$b, $1; SELECT 'x'").count == 2)
        #expect(PostgreSQLText.statements(in: "").isEmpty)
        #expect(PostgreSQLText.statements(in: "'unterminated; string").count == 1)
        // Any character past ASCII is part of a name or a dollar tag, as PostgreSQL lexes them.
        #expect(PostgreSQLText.statements(in: "DO $€$ BEGIN PERFORM 1; END $€$; SELECT 2;") == ["DO $€$ BEGIN PERFORM 1; END $€$;", "SELECT 2;"])
        #expect(PostgreSQLText.statements(in: "DO $e\u{301}$ BEGIN PERFORM 1; END $e\u{301}$; SELECT 2;").count == 2)
    }

    /// Passwords are left out of messages by Unicode scalar: a `:` or `=` that a combining
    /// mark follows is one `Character` with it.
    @Test func aURLsPasswordIsLeftOutWhateverFollowsItsSeparator() {
        #expect(PostgresEndpoint.redacted("postgres://u:\u{301}secret@host/db") == "postgres://u:…@host/db")
        #expect(PostgresEndpoint.redacted("postgres://u:secret@\u{301}host/db") == "postgres://u:…@\u{301}host/db")
        #expect(PostgresEndpoint.redacted("postgres://host/db?user=u&password=\u{301}secret") == "postgres://host/db?user=u&password=…")
        #expect(PostgresEndpoint.redacted("postgres://host/db?PASSWORD=x&sslmode=require") == "postgres://host/db?password=…&sslmode=require")
        #expect(PostgresEndpoint.redacted("not a url") == "not a url")
    }
}
