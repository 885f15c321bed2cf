import Foundation
import Logging
import PostgresTestSupport
import PropertyBased
import Testing
@testable import TrackedModels

/// The PostgreSQL dialect and the in-memory evaluator agree, as ``QueryAgreementTests`` checks
/// for SQLite: the same generated predicates and orders, over the same generated rows, select
/// the same rows in the same order, and each predicate is true for the same rows.
///
/// Two things PostgreSQL cannot do as SQLite does are let pass when the server refuses them,
/// and counted: integer arithmetic that overflows (SQLite, and the evaluator, turn it into a
/// real; PostgreSQL fails with `numeric value out of range`), and text holding U+0000, which
/// PostgreSQL's text cannot hold (rows keep their text without it).
@MainActor
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresQueryAgreementTests {
    static let cases = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_PROGRAMS"].flatMap(Int.init) ?? 150

    @Test func postgresAndTheEvaluatorAgreeOnGeneratedQueries() async throws {
        let url = try await PostgresServer.makeDatabase()
        let session = try await PostgresSession.connect(PostgresEndpoint(url: url), role: "agreement test", logger: Logger(label: "test"))
        // Every column nullable: a generated NaN is stored as NULL, as SQLite stores it.
        let columns = Item._$schema.columns.map { "\(quoteIdentifier($0.name)) \(PostgreSQLSchema.declaredType($0.type))\($0.isPrimaryKey ? " PRIMARY KEY" : "")" }
        _ = try await session.rows("CREATE TABLE items (\(columns.joined(separator: ", ")))", doing: "creating items")
        var refused = 0
        var checked = 0
        var random = Xoshiro(seed: UInt64(Date().timeIntervalSince1970))
        for _ in 0..<Self.cases {
            let (querySeed, rowSeed) = (random.next() % (1 << 40), random.next() % (1 << 40))
            if try await Self.check(querySeed: querySeed, rowSeed: rowSeed, on: session) { checked += 1 } else { refused += 1 }
        }
        // Most queries must be checked, not refused.
        #expect(checked > Self.cases / 2, "only \(checked) of \(Self.cases) queries ran; \(refused) were refused")
        session.close()
    }

    /// Checks one query; false when the server refused it for a documented reason.
    static func check(querySeed: UInt64, rowSeed: UInt64, on session: PostgresSession) async throws -> Bool {
        let schema = Item._$schema
        // PostgreSQL's text cannot hold U+0000: the rows keep their text without it.
        let rows = QueryAgreementTests.generatedRows(seed: rowSeed).map { row in
            row.map { value -> SQLValue in
                if case .text(let text) = value { return .text(String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\u{0}" }))) }
                return value
            }
        }
        _ = try await session.rows("TRUNCATE items", doing: "emptying items")
        for row in rows {
            _ = try await session.rows("INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", row, doing: "inserting an item")
        }
        var generator = ExpressionGenerator(seed: querySeed, rows: rows, linked: true)
        let predicate = generator.boolean(depth: 3)
        let query = ExpressionGenerator.query(predicate: predicate, sort: generator.sort())
        let byKey = Dictionary(uniqueKeysWithValues: rows.map { ($0[0], $0) })
        let queryRows = rows.map { row in
            row + (byKey[row[Item.Column.link.rawValue]] ?? Array(repeating: .null, count: schema.columns.count))
        }
        let condition = PostgreSQLDialect.condition(query)
        let context = "seeds (\(querySeed), \(rowSeed)); expression \(predicate); SQL \(condition.sql) with \(condition.arguments)"
        do {
            let values = try await session.rows("SELECT \(condition.sql) FROM \(condition.from) ORDER BY items.id", condition.arguments, doing: "evaluating")
            for (row, value) in zip(queryRows, values) {
                let evaluated = QueryExpression.truth(predicate.evaluate(row))
                let answered: Bool? = switch value[0] {
                case .integer(let truth): truth != 0
                default: nil
                }
                #expect(evaluated == answered, "the evaluator says \(String(describing: evaluated)), PostgreSQL \(value[0]), for row \(row); \(context)")
            }
            let select = try PostgreSQLDialect.select(query, limit: nil)
            let selected = try await session.rows(select.sql, select.arguments, doing: "selecting").map { $0[0] }
            let evaluated = queryRows.filter(query.matches).map(query.entry(of:)).sorted(by: query.entryOrder.precedes).map(\.key)
            #expect(evaluated == selected, "the evaluator selects \(evaluated), PostgreSQL \(selected); order \(query.sort); \(context)")
            return true
        } catch let error as StoreError where error.code == .valueNotStorable {
            // 22003 (out of range) or 22021 (U+0000 in a literal): see the suite's comment.
            return false
        }
    }
}
