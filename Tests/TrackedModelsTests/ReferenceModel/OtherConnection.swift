import Foundation
import Logging
@testable import TrackedModels

/// Another connection to the program's database, as another process would have: it commits
/// changes the store did not make, and reads what the database holds. SQL is written with `?`
/// placeholders; on PostgreSQL they become `$1`, `$2` ...
enum OtherConnection {
    case sqlite(Connection)
    case postgres(PostgresSession)

    static func open(_ engine: TestEngine, _ database: String) async throws -> OtherConnection {
        switch engine {
        case .sqlite:
            return .sqlite(try Connection(filename: database, mode: .readWriteCreate, busyTimeout: .seconds(5)))
        case .postgres:
            let endpoint = try PostgresEndpoint(url: database)
            return .postgres(try await PostgresSession.connect(endpoint, role: "reference other connection", logger: Logger(label: "reference")))
        }
    }

    /// Runs statements in one transaction; throws (having rolled back) when one fails.
    func commit(_ statements: [(sql: String, arguments: [SQLValue])]) async throws {
        switch self {
        case .sqlite(let connection):
            try connection.execute("BEGIN IMMEDIATE")
            do {
                for statement in statements { try connection.makeStatement(statement.sql).run(statement.arguments) }
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        case .postgres(let session):
            _ = try await session.rows("BEGIN", doing: "beginning")
            do {
                for statement in statements { _ = try await session.rows(Self.numbered(statement.sql), statement.arguments, doing: "writing") }
                _ = try await session.rows("COMMIT", doing: "committing")
            } catch {
                _ = try? await session.rows("ROLLBACK", doing: "rolling back")
                throw error
            }
        }
    }

    /// Whether one statement committed (on its own).
    func commits(_ sql: String, _ arguments: [SQLValue]) async -> Bool {
        (try? await commit([(sql, arguments)])) != nil
    }

    func rows(_ sql: String) async throws -> [[SQLValue]] {
        switch self {
        case .sqlite(let connection): try connection.makeStatement(sql).rows()
        case .postgres(let session): try await session.rows(sql, doing: "reading")
        }
    }

    func close() {
        if case .postgres(let session) = self { session.close() }
    }

    /// SQL with `?` placeholders numbered as PostgreSQL takes them (the statements here hold no
    /// `?` in a literal).
    private static func numbered(_ sql: String) -> String {
        var number = 0
        return sql.split(separator: "?", omittingEmptySubsequences: false).reduce(into: "") { result, part in
            if !result.isEmpty || number > 0 { result += "$\(number)" }
            result += part
            number += 1
        }
    }
}
