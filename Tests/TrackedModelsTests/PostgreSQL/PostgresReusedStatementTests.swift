import Foundation
import Logging
import PostgresTestSupport
import PropertyBased
import Testing
@testable import TrackedModels

/// The writer's statements prepared once per connection (``PostgresPipeline``) store
/// and answer exactly what the same statements sent unnamed do, for generated values of every
/// kind into columns of every type the store reads; and a statement the server could not
/// prepare is prepared again next time.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresReusedStatementTests {
    static let columns = [
        ("i2", "smallint"), ("i4", "integer"), ("i8", "bigint"), ("f8", "double precision"), ("f4", "real"), ("b", "boolean"),
        ("v", "varchar(6)"), ("t", "text"), ("c", "character(3)"), ("n", "numeric"), ("by", "bytea"), ("ts", "timestamp"),
    ]

    static let values: [SQLValue] = [
        .null, .integer(0), .integer(1), .integer(2), .integer(-1), .integer(32_767), .integer(32_768), .integer(-32_769),
        .integer(2_147_483_647), .integer(2_147_483_648), .integer(.max), .integer(.min),
        .real(0), .real(-0.0), .real(1.5), .real(-2.25), .real(.nan), .real(.infinity), .real(-.infinity), .real(1e300), .real(0.1), .real(3.4e39),
        .text(""), .text("abc"), .text("abc   "), .text("abcdefgh"), .text("ü€😀"), .text("12"), .text("1.5"), .text("t"), .text("NaN"),
        .text("2026-11-24 10:00:00"), .text("\\x00ff"), .text("a\u{0}b"),
        .blob(Data()), .blob(Data([0, 1, 255])), .blob(Data("abc".utf8)),
    ]

    /// What a statement gave: its rows, or the code of the error it failed with.
    enum Outcome: Equatable {
        case rows([[SQLValue]])
        case failed(StoreError.Code)
    }

    static func outcome(_ body: () throws -> [[SQLValue]]) -> Outcome {
        do {
            return .rows(try body())
        } catch let error as StoreError {
            return .failed(error.code)
        } catch {
            return .failed(.engineFailure)
        }
    }

    /// Values compared bit for bit (a -0.0 is not a 0.0).
    static func exact(_ outcome: Outcome) -> String {
        guard case .rows(let rows) = outcome else { return "\(outcome)" }
        return "\(rows.map { $0.map { value in if case .real(let real) = value { "real \(real.bitPattern)" } else { "\(value)" } } })"
    }

    @Test func aStatementRunByNameStoresAndAnswersWhatItDoesUnnamed() async throws {
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test")
        defer { session.close() }
        let declarations = Self.columns.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, \(declarations))", doing: "creating cells")
        _ = try session.rowsWaiting("CREATE TABLE serials (id bigserial PRIMARY KEY, t text, i4 integer)", doing: "creating serials")
        _ = try session.rowsWaiting("INSERT INTO cells (id) VALUES (1), (2)", doing: "inserting rows")
        let seed = UInt64(Date().timeIntervalSince1970)
        var random = Xoshiro(seed: seed)
        /// Runs a statement by name on row 1 and unnamed on row 2, and compares what each gave
        /// and what each row holds afterwards.
        func compare(_ sql: String, _ values: [SQLValue], reading columns: String, _ what: String) throws {
            let named = Self.outcome { try session.rowsWaiting(sql, values + [.integer(1)], reused: true, doing: "by name") }
            let unnamed = Self.outcome { try session.rowsWaiting(sql, values + [.integer(2)], doing: "unnamed") }
            #expect(Self.exact(named) == Self.exact(unnamed), "seed \(seed), \(what): by name \(named), unnamed \(unnamed)")
            let stored = try session.rowsWaiting("SELECT \(columns) FROM cells ORDER BY id", doing: "reading back")
            #expect(Self.exact(.rows([stored[0]])) == Self.exact(.rows([stored[1]])), "seed \(seed), \(what): stored \(stored[0]) by name, \(stored[1]) unnamed")
        }
        for (column, type) in Self.columns {
            for value in Self.values {
                try compare("UPDATE cells SET \(column) = $1 WHERE id = $2 RETURNING \(column)", [value], reading: column, "\(value) into \(type)")
            }
        }
        // Increments, as the writer makes them, of each integer column.
        for column in ["i2", "i4", "i8"] {
            for case .integer(let delta) in Self.values {
                try compare("UPDATE cells SET \(column) = \(column) + $1 WHERE id = $2 RETURNING \(column)", [.integer(delta)], reading: column, "\(column) + \(delta)")
            }
        }
        // Generated updates of two columns at once.
        for _ in 0..<200 {
            let first = Self.columns[Int(random.next() % UInt64(Self.columns.count))].0
            let second = Self.columns[Int(random.next() % UInt64(Self.columns.count))].0
            guard first != second else { continue }
            let values = [Self.values[Int(random.next() % UInt64(Self.values.count))], Self.values[Int(random.next() % UInt64(Self.values.count))]]
            try compare("UPDATE cells SET \(first) = $1, \(second) = $2 WHERE id = $3 RETURNING \(first), \(second)", values, reading: "\(first), \(second)", "\(values) into \(first), \(second)")
        }
        // Inserts whose key the database assigns, returning it.
        for value in Self.values {
            let insert = "INSERT INTO serials (t, i4) VALUES ($1, $2) RETURNING id"
            let named = Self.outcome { try session.rowsWaiting(insert, [value, value], reused: true, doing: "by name") }
            let unnamed = Self.outcome { try session.rowsWaiting(insert, [value, value], doing: "unnamed") }
            switch (named, unnamed) {
            case (.rows(let named), .rows(let unnamed)):
                let stored = try session.rowsWaiting("SELECT t, i4 FROM serials WHERE id = $1 OR id = $2 ORDER BY id", [named[0][0], unnamed[0][0]], doing: "reading back")
                #expect(stored.count == 2 && stored[0] == stored[1], "seed \(seed), inserting \(value): stored \(stored)")
            default:
                #expect(named == unnamed, "seed \(seed), inserting \(value): by name \(named), unnamed \(unnamed)")
            }
        }
        // The statements kept ran by name: the server counts their executions.
        let listed = try session.rowsWaiting(
            "SELECT count(*), coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements WHERE name LIKE 'trackedmodels_%'",
            doing: "listing prepared statements"
        )
        #expect(listed.first?.first == .integer(Int64(session.reusedStatementCount)))
        if case .integer(let executions) = listed.first?.last {
            #expect(executions >= Int64(Self.values.count), "\(executions) executions by name")
        } else {
            Issue.record("no executions listed: \(listed)")
        }
    }

    @Test func aStatementTheServerCouldNotPrepareIsPreparedAgainNextTime() async throws {
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test")
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, n integer)", doing: "creating cells")
        _ = try session.rowsWaiting("INSERT INTO cells VALUES (1, 0)", doing: "inserting a row")
        let increment = "UPDATE cells SET n = n + $1 WHERE id = $2 RETURNING n"
        // A statement that fails, then the increment's first use in the same transaction: the
        // server refuses to prepare it (the transaction is aborted), and the first failure
        // taken is the statement that caused it.
        try session.begin(doing: "beginning")
        let failing = try session.send("SELECT 1 / 0", doing: "dividing")
        let refused = try session.send(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing")
        #expect { try failing.rows() } throws: { ($0 as? StoreError)?.code == .valueNotStorable }
        let error = try #require(throws: StoreError.self) { try refused.rows() }
        #expect(error.message.contains("aborted"), "\(error.message)")
        try session.end("ROLLBACK", doing: "rolling back")
        #expect(session.reusedStatementCount == 0)
        // Next time it is prepared, and runs by name from then on.
        for expected in 1...3 {
            #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(Int64(expected))]])
        }
        #expect(session.reusedStatementCount == 1)
        // A statement prepared in a transaction that rolls back stays prepared (PostgreSQL's
        // prepared statements are the session's, not the transaction's).
        let read = "SELECT n FROM cells WHERE id = $1"
        try session.begin(doing: "beginning")
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(3)]])
        try session.end("ROLLBACK", doing: "rolling back")
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(3)]])
        #expect(session.reusedStatementCount == 2)
        // A new connection prepares its own.
        session.close()
        #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(4)]])
        #expect(session.reusedStatementCount == 1)
    }
    @Test func aFailureInAPipelineIsTheFailingStatementsAndItsValuesDoNotUnprepareIt() async throws {
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test")
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, a integer, b integer, c integer)", doing: "creating cells")
        let insert = "INSERT INTO cells (id, a, b, c) VALUES ($1, $2, $3, $4)"
        try session.begin(doing: "beginning")
        var answers = [
            try session.send(insert, [.integer(1), .integer(0), .integer(0), .integer(0)], reused: true, doing: "inserting"),
            try session.send(insert, [.integer(1), .integer(0), .integer(0), .integer(0)], reused: true, doing: "inserting again"),
        ]
        for column in ["a", "b", "c"] {
            answers.append(try session.send("UPDATE cells SET \(column) = $1 WHERE id = $2 RETURNING 1", [.integer(1), .integer(1)], reused: true, doing: "updating"))
        }
        #expect(try answers[0].rows() == [])
        #expect { try answers[1].rows() } throws: { ($0 as? StoreError)?.constraint == .primaryKey }
        for answer in answers.dropFirst(2) {
            #expect(throws: StoreError.self) { try answer.rows() }
        }
        try session.end("ROLLBACK", doing: "rolling back")
        // The insert stays prepared (its values failed, not it); the updates, refused in the
        // failed transaction, are not kept.
        #expect(session.reusedStatementCount == 1)
        let listed = try session.rowsWaiting("SELECT count(*) FROM pg_prepared_statements", doing: "listing")
        #expect(listed == [[.integer(1)]])
    }

    @Test func aStatementTheTableChangedUnderIsPreparedAgainAndTheStoreTriesAgain() async throws {
        let url = try await PostgresServer.makeDatabase()
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: url), role: "test")
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, n integer)", doing: "creating cells")
        _ = try session.rowsWaiting("INSERT INTO cells VALUES (1, 0)", doing: "inserting a row")
        let increment = "UPDATE cells SET n = n + $1 WHERE id = $2 RETURNING n"
        let read = "SELECT n FROM cells WHERE id = $1"
        #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(1)]])
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(1)]])
        // Another connection changes the type the statements return: the first to run fails
        // (may pass), and every statement is prepared again.
        try await PostgresServer.psql(url, "ALTER TABLE cells ALTER COLUMN n TYPE bigint")
        let error = try #require(throws: StoreError.self) {
            try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing")
        }
        #expect(error.mayPass, "\(error.message)")
        #expect(session.reusedStatementCount == 0)
        #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(2)]])
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(2)]])
        #expect(session.reusedStatementCount == 2)
        // The server loses them (DEALLOCATE ALL): the same.
        _ = try session.rowsWaiting("DEALLOCATE ALL", doing: "dropping prepared statements")
        let lost = try #require(throws: StoreError.self) { try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") }
        #expect(lost.mayPass, "\(lost.message)")
        #expect(session.reusedStatementCount == 0)
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(2)]])
    }

    /// An unsupported feature that is not about the prepared statement (INSERT ... RETURNING
    /// into a table whose rule does the insert instead) is no failure that passes.
    @Test func anUnsupportedStatementIsNotTriedAgain() async throws {
        let session = PostgresPipeline(endpoint: try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test")
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, n integer)", doing: "creating cells")
        _ = try session.rowsWaiting("CREATE TABLE elsewhere (id bigint, n integer)", doing: "creating elsewhere")
        _ = try session.rowsWaiting("CREATE RULE instead AS ON INSERT TO cells DO INSTEAD INSERT INTO elsewhere VALUES (NEW.id, NEW.n)", doing: "creating a rule")
        let error = try #require(throws: StoreError.self) {
            try session.rowsWaiting("INSERT INTO cells (id, n) VALUES ($1, $2) RETURNING id", [.integer(1), .integer(1)], reused: true, doing: "inserting")
        }
        #expect(PostgresErrors.sqlState(of: error) == "0A000")
        #expect(!error.mayPass, "\(error.message)")
    }
}
