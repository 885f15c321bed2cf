import Logging
import NIOCore
import PostgresNIO

/// The writer's statements, prepared once per connection and executed by name afterwards, so
/// that the server parses and plans each kind of statement (an update of one table's set of
/// columns, an insert into one table) once instead of at every execution.
///
/// postgres-nio names a statement either by a type whose SQL is static
/// (`PostgresPreparedStatement`; the store makes its SQL per table and set of columns) or
/// through `prepare(query:)`, whose parameters go in binary form. So each statement's
/// parameter types are read once when it is prepared, and a value goes by name where it has
/// a binary form of exactly its parameter's type: an integer for an `int8`, `int4` or `int2`
/// that holds it, a real for a `float8`, text for `text` or `varchar`, bytes for `bytea`, 0
/// or 1 for a `boolean`, NULL for any. Any other value (text for a `numeric`, a real for an
/// `integer`) leaves the execution to an unnamed statement with text parameters, where the
/// server reads it exactly as everywhere else in the store: a named execution never reads a
/// value differently from an unnamed one.
///
/// Owned by one ``PostgresSession``, on the worker's queue; dropped with its connection.
struct PostgresReusedStatements {
    private struct Prepared {
        let query: PreparedQuery
        let parameterTypes: [PostgresDataType]
    }

    private var prepared: [String: Prepared] = [:]

    /// At most this many statements stay prepared on a connection; later kinds go unnamed.
    static let capacity = 256

    /// How many statements are prepared (for tests).
    var count: Int { prepared.count }

    /// Executes `sql` by name on `connection`, preparing it the first time (waiting for the
    /// server: a round trip, once per kind of statement and connection); nil where it goes
    /// unnamed instead (a value without the binary form its parameter takes, or no room).
    ///
    /// A statement the server refuses to prepare (inside a transaction an earlier statement
    /// failed, for instance) gives that refusal as its answer, and is prepared again next time.
    mutating func execute(_ sql: String, _ arguments: [SQLValue], on connection: PostgresConnection, logger: Logger) -> EventLoopFuture<[PostgresRow]>? {
        if let statement = prepared[sql] {
            return Self.bindings(arguments, types: statement.parameterTypes).map { statement.query.execute($0) }
        }
        guard prepared.count < Self.capacity else { return nil }
        let preparing = connection.prepare(query: sql)
        // Sent right behind the preparation, so both take one round trip.
        let types = connection.query(
            "SELECT array_to_string(parameter_types::oid[], ',') FROM pg_prepared_statements WHERE statement = \(sql) LIMIT 1",
            logger: logger
        )
        let statement: Prepared
        do {
            let query = try preparing.wait()
            do {
                statement = Prepared(query: query, parameterTypes: try Self.parameterTypes(try types.wait()))
            } catch {
                query.deallocate().whenComplete { _ in }
                throw error
            }
        } catch {
            return connection.eventLoop.makeFailedFuture(error)
        }
        prepared[sql] = statement
        return Self.bindings(arguments, types: statement.parameterTypes).map { statement.query.execute($0) }
    }

    private static func parameterTypes(_ result: PostgresQueryResult) throws -> [PostgresDataType] {
        guard let list = try result.rows.first?.decode(String?.self) else { throw MissingStatement() }
        return list.split(separator: ",").compactMap { UInt32($0).map { PostgresDataType($0) } }
    }

    /// The prepared statement was not listed by the server (it is there when preparing succeeds).
    private struct MissingStatement: Error {}

    /// Each value in the binary form of its parameter's type; nil when one has none.
    static func bindings(_ values: [SQLValue], types: [PostgresDataType]) -> [PostgresData]? {
        guard values.count == types.count else { return nil }
        var bindings: [PostgresData] = []
        bindings.reserveCapacity(values.count)
        for (value, type) in zip(values, types) {
            guard let bytes = binaryForm(of: value, as: type) else { return nil }
            bindings.append(PostgresData(type: type, formatCode: .binary, value: bytes))
        }
        return bindings
    }

    /// The bytes PostgreSQL's binary input of `type` reads as `value`; `.some(nil)` for NULL
    /// (a NaN is NULL, as everywhere in the store); nil when there are none.
    private static func binaryForm(of value: SQLValue, as type: PostgresDataType) -> ByteBuffer?? {
        var buffer = ByteBuffer()
        switch (value, type) {
        case (.null, _):
            return .some(nil)
        case (.real(let real), _) where real.isNaN:
            return .some(nil)
        case (.integer(let integer), .int8):
            buffer.writeInteger(integer)
        case (.integer(let integer), .int4):
            guard let narrow = Int32(exactly: integer) else { return nil }
            buffer.writeInteger(narrow)
        case (.integer(let integer), .int2):
            guard let narrow = Int16(exactly: integer) else { return nil }
            buffer.writeInteger(narrow)
        case (.integer(let integer), .bool) where integer == 0 || integer == 1:
            buffer.writeInteger(UInt8(integer))
        case (.real(let real), .float8):
            buffer.writeInteger(real.bitPattern)
        case (.text(let text), .text), (.text(let text), .varchar):
            // A NUL is refused by PostgreSQL in either form; the unnamed statement says so.
            guard !text.utf8.contains(0) else { return nil }
            buffer.writeString(text)
        case (.blob(let data), .bytea):
            buffer.writeBytes(data)
        default:
            return nil
        }
        return .some(buffer)
    }
}
