/// The reading half of the PostgreSQL engine: a connection of the store's own, awaited on the
/// store's actor (a read is a round trip to the server, which the actor never waits for).
///
/// The store's read paths are synchronous code shared by both engines. On PostgreSQL they run
/// inside ``answering(from:_:)``: each read they make is answered from reads fetched ahead
/// (``read(_:)``), and one not fetched yet is recorded and answered as empty; the store then
/// fetches what was missing, with the actor free meanwhile, and runs them again, until a run
/// finds every answer (see `ModelStore.reading(_:)`). Outside that, a read fails with
/// ``StoreError/Code/asyncReadRequired``.
final class PostgreSQLReader: EngineReader {
    private let session: PostgresSession
    private let schemas: [TableSchema]
    /// The answers of the run in progress, the reads it missed, and whether a miss ends the
    /// run; nil outside a run.
    private var run: (answers: [RemoteRead: [[SQLValue]]], misses: Set<RemoteRead>, stopsAtMiss: Bool)?
    /// Statements sent so far: how tests count the reads a feature costs.
    private(set) var statementsRun = 0

    init(session: PostgresSession, schemas: [TableSchema]) {
        self.session = session
        self.schemas = schemas
    }

    func rows(matching query: CompiledQuery, limit: Int?) throws -> [[SQLValue]] {
        let select = try PostgreSQLDialect.select(query, limit: limit)
        return try answer(RemoteRead(sql: select.sql, arguments: select.arguments))
    }

    func count(matching query: CompiledQuery) throws -> Int {
        let count = PostgreSQLDialect.count(query)
        guard case .integer(let total) = try answer(RemoteRead(sql: count.sql, arguments: count.arguments)).first?.first else { return 0 }
        return Int(total)
    }

    func parameter(_ index: Int) -> String { "$\(index)" }

    func row(table: Int, key: SQLValue) throws -> [SQLValue]? {
        let schema = schemas[table]
        return try answer(RemoteRead(sql: "\(schema.selectSQL) WHERE \(quoteIdentifier(schema.primaryKey.name)) = $1", arguments: [key])).first
    }

    /// Where the overlay has rows, the statement reads a table of the same name (a common table
    /// expression, which hides the real one) that holds the committed rows without the hidden
    /// keys, and the overlay's rows, bound after the caller's `$n` parameters as one array per
    /// column (so that any number of rows may be pending). It holds the model's columns only.
    ///
    /// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/queries-with.html>
    func rows(table: Int, nativeSQL sql: String, arguments: [SQLValue], overlay: TableOverlay) throws -> [[SQLValue]] {
        guard !overlay.isEmpty else { return try answer(RemoteRead(sql: sql, arguments: arguments)) }
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
        return try answer(RemoteRead(sql: "WITH \(quoteIdentifier(schema.name))(\(names)) AS (\(rows)) \(sql)", arguments: values))
    }

    private func answer(_ read: RemoteRead) throws -> [[SQLValue]] {
        guard var current = run else {
            throw StoreError(
                code: .asyncReadRequired,
                message: "a read on PostgreSQL is a round trip to the server, which the store's actor does not wait for; use the async form (try await store.async.fetch(...))"
            )
        }
        if let rows = current.answers[read] { return rows }
        current.misses.insert(read)
        run = current
        if current.stopsAtMiss { throw MissedRead() }
        return []
    }

    /// Ends a run that stops at its first miss.
    private struct MissedRead: Error {}
}

/// A read an engine across a network answers: a statement and its arguments.
struct RemoteRead: Hashable, Sendable {
    var sql: String
    var arguments: [SQLValue]
}

extension PostgreSQLReader: RemoteEngineReader {
    func answering<Result>(
        from answers: [RemoteRead: [[SQLValue]]], stopsAtMiss: Bool, _ body: () throws -> Result
    ) -> (result: Swift.Result<Result, any Error>, misses: Set<RemoteRead>) {
        let outer = run
        run = (answers, [], stopsAtMiss)
        defer { run = outer }
        let result = Swift.Result { try body() }
        return (result, run?.misses ?? [])
    }

    var isMissingReads: Bool { run?.misses.isEmpty == false }

    func read(_ reads: Set<RemoteRead>) async throws -> [RemoteRead: [[SQLValue]]] {
        var answers: [RemoteRead: [[SQLValue]]] = [:]
        for read in reads {
            statementsRun += 1
            do {
                answers[read] = try await session.rows(read.sql, read.arguments, doing: "reading")
            } catch let error as StoreError where error.code == .connectionLost {
                // A connection the server ended while idle is noticed only now: a read can be
                // made again on a new one, once.
                answers[read] = try await session.rows(read.sql, read.arguments, doing: "reading")
            }
        }
        return answers
    }
}

/// The reading half of an engine whose reads cross a network (PostgreSQL): the store's
/// synchronous read paths run against answers fetched ahead, see ``PostgreSQLReader``.
protocol RemoteEngineReader: EngineReader {
    /// Runs `body`, answering the reads it makes from `answers`; a read not among them is
    /// listed in `misses`, and either answered as empty (for a body without side effects, so
    /// that one run finds every read it needs), or it ends the run (`stopsAtMiss`: nothing
    /// after the missing read happens).
    func answering<Result>(
        from answers: [RemoteRead: [[SQLValue]]], stopsAtMiss: Bool, _ body: () throws -> Result
    ) -> (result: Swift.Result<Result, any Error>, misses: Set<RemoteRead>)

    /// Fetches the answers of reads.
    func read(_ reads: Set<RemoteRead>) async throws -> [RemoteRead: [[SQLValue]]]

    /// Whether the run in progress has missed a read: what it read since may be incomplete,
    /// and must not be kept (the run is made again once the read is answered).
    var isMissingReads: Bool { get }
}

/// Thrown where a run's reads are incomplete and what they found must not be kept (see
/// ``RemoteEngineReader/isMissingReads``); the run is made again once they are answered.
struct RemoteReadPending: Error {}
