/// The reading half of the PostgreSQL engine: a connection of the store's own, awaited on the
/// store's actor (a read is a round trip to the server, which the actor never waits for).
///
/// Reads are answered only through ``answer(_:)``, awaited; the read side (`StoreReads`) asks
/// for what a read needs in stages, and composes the answers once it has them all.
final class PostgreSQLReader: EngineReader {
    private let session: PostgresSession
    private let schemas: [TableSchema]
    /// Statements sent so far: how tests count the reads a feature costs.
    private(set) var statementsRun = 0

    init(session: PostgresSession, schemas: [TableSchema]) {
        self.session = session
        self.schemas = schemas
    }

    var answersAtOnce: Bool { false }

    func answerNow(_ reads: [DatabaseRead]) throws -> [[[SQLValue]]] {
        throw StoreError(
            code: .asyncReadRequired,
            message: "a read on PostgreSQL is a round trip to the server, which the store's actor does not wait for; use the async form (try await store.async.fetch(...))"
        )
    }

    func answer(_ reads: [DatabaseRead]) async throws -> [[[SQLValue]]] {
        var answers: [[[SQLValue]]] = []
        for read in reads {
            let (sql, arguments) = try statement(of: read)
            statementsRun += 1
            do {
                answers.append(try await session.rows(sql, arguments, doing: "reading"))
            } catch let error as StoreError where error.code == .connectionLost {
                // A connection the server ended while idle is noticed only now: a read can be
                // made again on a new one, once.
                answers.append(try await session.rows(sql, arguments, doing: "reading"))
            }
        }
        return answers
    }

    func parameter(_ index: Int) -> String { "$\(index)" }

    /// A read as one statement and its arguments.
    private func statement(of read: DatabaseRead) throws -> (sql: String, arguments: [SQLValue]) {
        switch read {
        case .query(let query, let limit):
            let select = try PostgreSQLDialect.select(query, limit: limit)
            return (select.sql, select.arguments)
        case .count(let query):
            let count = PostgreSQLDialect.count(query)
            return (count.sql, count.arguments)
        case .rows(let table, let keys):
            let schema = schemas[table]
            let keyType = PostgreSQLSchema.declaredType(schema.primaryKey.type)
            return ("\(schema.selectSQL) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ANY($1::\(keyType)[])", [PostgresValues.arrayLiteral(keys)])
        case .native(let table, let sql, let arguments, let overlay):
            return statement(table: table, nativeSQL: sql, arguments: arguments, overlay: overlay)
        }
    }

    /// Where the overlay has rows, the statement reads a table of the same name (a common table
    /// expression, which hides the real one) that holds the committed rows without the hidden
    /// keys, and the overlay's rows, bound after the caller's `$n` parameters as one array per
    /// column (so that any number of rows may be pending). It holds the model's columns only.
    ///
    /// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/queries-with.html>
    private func statement(table: Int, nativeSQL sql: String, arguments: [SQLValue], overlay: TableOverlay) -> (sql: String, arguments: [SQLValue]) {
        guard !overlay.isEmpty else { return (sql, arguments) }
        let schema = schemas[table]
        let names = schema.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        var values = arguments
        func parameter(_ value: SQLValue, as type: String) -> String {
            values.append(value)
            return "$\(values.count)::\(type)"
        }
        var rows = "SELECT \(names) FROM \(quoteIdentifier(schema.name))"
        if overlay.hidesEveryRow {
            rows += " WHERE FALSE"
        } else if !overlay.hiddenKeys.isEmpty {
            let keyType = PostgreSQLSchema.declaredType(schema.primaryKey.type)
            rows += " WHERE \(quoteIdentifier(schema.primaryKey.name)) <> ALL(\(parameter(PostgresValues.arrayLiteral(overlay.hiddenKeys), as: keyType + "[]")))"
        }
        if !overlay.rows.isEmpty {
            // A column's values as one array each: as many parameters however many rows.
            let columns = schema.columns.enumerated().map { index, column in
                parameter(PostgresValues.arrayLiteral(overlay.rows.map { $0[index] }), as: PostgreSQLSchema.declaredType(column.type) + "[]")
            }
            rows += " UNION ALL SELECT * FROM unnest(\(columns.joined(separator: ", ")))"
        }
        return ("WITH \(quoteIdentifier(schema.name))(\(names)) AS (\(rows)) \(sql)", values)
    }
}
