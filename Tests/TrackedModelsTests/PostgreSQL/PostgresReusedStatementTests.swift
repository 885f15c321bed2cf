import Foundation
import Logging
import PostgresTestSupport
import PropertyBased
import Testing
@testable import TrackedModels

/// The writer's statements prepared once per connection (``PostgresReusedStatements``) store
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

    @Test func aStatementRunByNameStoresAndAnswersWhatItDoesUnnamed() async throws {
        let session = try await PostgresSession.connect(PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test", logger: Logger(label: "test"))
        defer { session.close() }
        let declarations = Self.columns.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, \(declarations))", doing: "creating cells")
        _ = try session.rowsWaiting("INSERT INTO cells (id) VALUES (1), (2)", doing: "inserting rows")
        var random = Xoshiro(seed: UInt64(Date().timeIntervalSince1970))
        var compared = 0
        var statements: Set<String> = []
        for (column, type) in Self.columns {
            // Every value once, then generated pairs (an update of two columns at once).
            for value in Self.values {
                let update = "UPDATE cells SET \(column) = $1 WHERE id = $2 RETURNING \(column)"
                statements.insert(update)
                let named = Self.outcome { try session.rowsWaiting(update, [value, .integer(1)], reused: true, doing: "updating by name") }
                let unnamed = Self.outcome { try session.rowsWaiting(update, [value, .integer(2)], doing: "updating unnamed") }
                #expect(named == unnamed, "\(value) into \(type): by name \(named), unnamed \(unnamed)")
                let stored = try session.rowsWaiting("SELECT \(column) FROM cells ORDER BY id", doing: "reading back")
                #expect(stored[0] == stored[1], "\(value) into \(type): stored \(stored[0]) by name, \(stored[1]) unnamed")
                compared += 1
            }
        }
        for _ in 0..<200 {
            let first = Self.columns[Int(random.next() % UInt64(Self.columns.count))].0
            let second = Self.columns[Int(random.next() % UInt64(Self.columns.count))].0
            guard first != second else { continue }
            let values = [Self.values[Int(random.next() % UInt64(Self.values.count))], Self.values[Int(random.next() % UInt64(Self.values.count))]]
            let update = "UPDATE cells SET \(first) = $1, \(second) = $2 WHERE id = $3 RETURNING \(first), \(second)"
            statements.insert(update)
            let named = Self.outcome { try session.rowsWaiting(update, values + [.integer(1)], reused: true, doing: "updating by name") }
            let unnamed = Self.outcome { try session.rowsWaiting(update, values + [.integer(2)], doing: "updating unnamed") }
            #expect(named == unnamed, "\(values) into \(first), \(second): by name \(named), unnamed \(unnamed)")
            let stored = try session.rowsWaiting("SELECT \(first), \(second) FROM cells ORDER BY id", doing: "reading back")
            #expect(stored[0] == stored[1], "\(values) into \(first), \(second): stored \(stored[0]) by name, \(stored[1]) unnamed")
            compared += 1
        }
        #expect(compared > Self.columns.count * Self.values.count)
        // Each kind of statement was prepared once, and stays prepared.
        #expect(session.reusedStatementCount == statements.count)
    }

    @Test func aStatementTheServerCouldNotPrepareIsPreparedAgainNextTime() async throws {
        let session = try await PostgresSession.connect(PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test", logger: Logger(label: "test"))
        defer { session.close() }
        _ = try session.rowsWaiting("CREATE TABLE cells (id bigint PRIMARY KEY, n integer)", doing: "creating cells")
        _ = try session.rowsWaiting("INSERT INTO cells VALUES (1, 0)", doing: "inserting a row")
        let increment = "UPDATE cells SET n = n + $1 WHERE id = $2 RETURNING n"
        // A statement that fails, then the increment's first use in the same transaction: the
        // server refuses to prepare it (the transaction is aborted), and the first failure
        // taken is the statement that caused it.
        try await session.begin(doing: "beginning")
        let failing = try session.send("SELECT 1 / 0", doing: "dividing")
        let refused = try session.send(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing")
        #expect(throws: StoreError.self) { try failing.rows() }
        let error = try #require(throws: StoreError.self) { try refused.rows() }
        #expect(error.message.contains("aborted"), "\(error.message)")
        try await session.end("ROLLBACK", doing: "rolling back")
        #expect(session.reusedStatementCount == 0)
        // Next time it is prepared, and runs by name from then on.
        for expected in 1...3 {
            #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(Int64(expected))]])
        }
        #expect(session.reusedStatementCount == 1)
        // A statement prepared in a transaction that rolls back stays prepared (PostgreSQL's
        // prepared statements are the session's, not the transaction's).
        let read = "SELECT n FROM cells WHERE id = $1"
        try await session.begin(doing: "beginning")
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(3)]])
        try await session.end("ROLLBACK", doing: "rolling back")
        #expect(try session.rowsWaiting(read, [.integer(1)], reused: true, doing: "reading") == [[.integer(3)]])
        #expect(session.reusedStatementCount == 2)
        // A new connection prepares its own.
        session.close()
        #expect(try session.rowsWaiting(increment, [.integer(1), .integer(1)], reused: true, doing: "incrementing") == [[.integer(4)]])
        #expect(session.reusedStatementCount == 1)
    }
}
