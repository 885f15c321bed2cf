import Foundation
import PostgresTestSupport
import Testing
@testable import TrackedModels

/// The worker's pipelined connection (``PostgresPipeline``): a statement outside a transaction
/// commits at the sync after it, a COMMIT after a refusal commits nothing, and a connection the
/// server ended while idle is made again before anything is sent on it.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresPipelineTests {
    /// A pipeline on a database of its own, connecting at its first statement.
    static func pipelineOnANewDatabase() async throws -> PostgresPipeline {
        PostgresPipeline(endpoint: try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test")
    }

    /// The URL's liveness options reach the server's end of the connection as well (a TCP
    /// connection's: the server ignores them on a Unix socket); left out, the store's own
    /// apply. A value that is not a positive whole number is refused, naming it.
    @Test func livenessOptionsReachTheServerAndBadOnesAreRefused() async throws {
        let url = try await PostgresServer.makeDatabase()
        let settings = "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name LIKE 'tcp_%'"
        let tuned = PostgresPipeline(endpoint: try PostgresEndpoint(url: url + "?keepalives_idle=7&keepalives_count=4&tcp_user_timeout=4000"), role: "test")
        defer { tuned.close() }
        #expect(try tuned.rowsWaiting(settings, doing: "reading settings") == [[.text("tcp_keepalives_count=4 tcp_keepalives_idle=7 tcp_keepalives_interval=5 tcp_user_timeout=4000")]])
        let plain = PostgresPipeline(endpoint: try PostgresEndpoint(url: url), role: "test")
        defer { plain.close() }
        #expect(try plain.rowsWaiting(settings, doing: "reading settings") == [[.text("tcp_keepalives_count=3 tcp_keepalives_idle=10 tcp_keepalives_interval=5 tcp_user_timeout=25000")]])
        for option in ["keepalives_idle=0", "keepalives_interval=-1", "keepalives_count=x", "tcp_user_timeout=", "tcp_user_timeout=99999999999"] {
            let refused = try #require(throws: StoreError.self) { try PostgresEndpoint(url: url + "?" + option) }
            #expect(refused.code == .cannotOpen && refused.message.contains(option) && refused.message.contains("positive whole number"), "\(refused)")
        }
    }

    /// A statement run alone whose commit fails (a deferred foreign key checked at the sync)
    /// fails, and the statement after it runs as usual.
    @Test func aStatementWhoseCommitFailsFailsItself() async throws {
        let session = try await Self.pipelineOnANewDatabase()
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE parents (id bigint PRIMARY KEY)", doing: "creating parents")
        _ = try session.rowsWaiting("CREATE TABLE children (id bigint, parent bigint REFERENCES parents DEFERRABLE INITIALLY DEFERRED)", doing: "creating children")
        let refused = try #require(throws: StoreError.self) {
            try session.rowsWaiting("INSERT INTO children VALUES (1, 5)", doing: "inserting a child")
        }
        #expect(refused.constraint == .foreignKey, "\(refused)")
        #expect(try session.rowsWaiting("SELECT count(*) FROM children", doing: "counting") == [[.integer(0)]])
    }

    /// A COMMIT sent after a statement the server refused commits nothing: it fails with the
    /// refusal, and the connection is back outside any transaction.
    @Test func aCommitAfterARefusalCommitsNothing() async throws {
        let session = try await Self.pipelineOnANewDatabase()
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY)", doing: "creating cells")
        try session.begin(doing: "beginning")
        let inserted = try session.send("INSERT INTO cells VALUES (1)", doing: "inserting")
        _ = try session.send("INSERT INTO cells VALUES (1)", doing: "inserting again")
        _ = try session.send("INSERT INTO cells VALUES (2)", doing: "inserting after")
        #expect(try inserted.rows() == [])
        // The refusal and the statement after it are not taken before the COMMIT.
        let error = try #require(throws: StoreError.self) { try session.end("COMMIT", doing: "committing") }
        #expect(error.message.contains("aborted"), "\(error)")
        #expect(!session.isInTransaction)
        #expect(try session.rowsWaiting("SELECT count(*) FROM cells", doing: "counting") == [[.integer(0)]])
        #expect { try session.end("COMMIT", doing: "committing again") } throws: { ($0 as? StoreError)?.code == .engineFailure }
    }

    /// Text holding U+0000 cannot travel as a C string: inside a transaction it is refused
    /// before it is sent, as PostgreSQL would refuse it, the statements after it are not run,
    /// and a COMMIT rolls back what came before.
    @Test func textThatCannotTravelIsRefusedAndItsTransactionCommitsNothing() async throws {
        let session = try await Self.pipelineOnANewDatabase()
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, t text)", doing: "creating cells")
        try session.begin(doing: "beginning")
        let before = try session.send("INSERT INTO cells VALUES (1, 'a')", doing: "inserting before")
        let refused = try session.send("INSERT INTO cells VALUES ($1, $2)", [.integer(2), .text("a\u{0}b")], reused: true, doing: "inserting")
        let after = try session.send("INSERT INTO cells VALUES (3, 'c')", doing: "inserting after")
        #expect(try before.rows() == [])
        let error = try #require(throws: StoreError.self) { try refused.rows() }
        #expect(error.code == .valueNotStorable && error.message.contains("0x00"), "\(error)")
        #expect { try after.rows() } throws: { ($0 as? StoreError)?.message.contains("0x00") == true }
        #expect { try session.end("COMMIT", doing: "committing") } throws: { ($0 as? StoreError)?.code == .valueNotStorable }
        #expect(try session.rowsWaiting("SELECT count(*) FROM cells", doing: "counting") == [[.integer(0)]])
        // The statement stays prepared: its value was refused, not it.
        #expect(try session.rowsWaiting("INSERT INTO cells VALUES ($1, $2)", [.integer(2), .text("ab")], reused: true, doing: "inserting") == [])
    }

    /// A connection the server refuses fails as the store's other connections' would: bad
    /// credentials, a missing database, no server there (which may pass).
    @Test func aRefusedConnectionFailsNamingWhy() async throws {
        let server = try PostgresServer.server.get()
        var missing = server
        missing.path = "/no_such_database"
        let cases: [(url: String, code: StoreError.Code, mentions: String)] = [
            (try PostgresServer.url(user: "tracked", password: "wrong"), .accessDenied, "credentials"),
            (missing.string!, .cannotOpen, "no_such_database"),
            ("postgres://tracked:tracked@127.0.0.1:1/tracked", .connectionLost, "127.0.0.1:1/tracked"),
        ]
        for (url, code, mentions) in cases {
            let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: url), role: "test")
            let error = try #require(throws: StoreError.self) { try session.rowsWaiting("SELECT 1", doing: "reading") }
            #expect(error.code == code && error.message.contains(mentions), "\(url): \(error)")
        }
    }

    /// The server ends the connection while it is idle (after statements run alone, whose
    /// syncs are read): the next statement runs on a new connection instead of failing.
    @Test func aConnectionTheServerEndedWhileIdleIsMadeAgain() async throws {
        let url = try await PostgresServer.makeDatabase()
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: url), role: "pipeline test")
        defer { session.close() }
        guard case .integer(let pid)? = try session.rowsWaiting("SELECT pg_backend_pid()", doing: "asking").first?.first else {
            Issue.record("no backend pid")
            return
        }
        _ = try session.rowsWaiting("SELECT 1", doing: "running alone")
        #expect(try await PostgresServer.psql(url, "SELECT pg_terminate_backend(\(pid))") == "t")
        try await settle { try await PostgresServer.psql(url, "SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)") == "0" }
        #expect(try session.rowsWaiting("SELECT pg_backend_pid() <> \(pid)", doing: "asking again") == [[.integer(1)]])
    }
}
