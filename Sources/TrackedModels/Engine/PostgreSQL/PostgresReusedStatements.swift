import Foundation
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
/// value differently from an unnamed one (while the columns keep the types they had when it
/// was prepared). A statement with a parameter of another type
/// (`numeric`, `timestamp`) is not kept prepared at all.
///
/// A named execution that fails because the statement no longer fits (a table changed what
/// it returns, or the server lost it) drops every statement, to be prepared again; one that
/// fails for another reason than its values or its transaction drops that statement. Owned by
/// one ``PostgresSession``, on the worker's queue; dropped with its connection.
struct PostgresReusedStatements {
    private struct Prepared {
        let query: PreparedQuery
        let parameterTypes: [PostgresDataType]
    }

    private var prepared: [String: Prepared] = [:]

    /// Statements sent unnamed: a parameter has a type without a binary form here, or the
    /// server did not list the statement.
    private var unnamed: Set<String> = []

    /// Whether a preparation failed in the current transaction: the server refuses every
    /// statement after a failure until the transaction ends, so nothing more is prepared
    /// (each would wait for its refusal) until then.
    private var isPreparingHeld = false

    /// At most this many statements are kept prepared on a connection (and as many kept
    /// unnamed); later kinds go unnamed.
    static let capacity = 256

    /// The parameter types with a binary form here.
    private static let supportedTypes: Set<PostgresDataType> = [.int2, .int4, .int8, .float8, .bool, .text, .varchar, .bytea]

    /// How many statements are prepared (for tests).
    var count: Int { prepared.count }

    /// An execution sent: by name, or a preparation that failed (its failure is the answer).
    struct Execution {
        let future: EventLoopFuture<[PostgresRow]>
        let isNamed: Bool
    }

    /// Executes `sql` by name on `connection`, preparing it the first time (waiting for the
    /// server: two round trips, once per kind of statement and connection); nil where it goes
    /// unnamed instead.
    ///
    /// A statement the server refuses to prepare (inside a transaction an earlier statement
    /// failed, for instance) gives that refusal as its answer, and is prepared again later.
    mutating func execute(_ sql: String, _ arguments: [SQLValue], on connection: PostgresConnection, logger: Logger) -> Execution? {
        if let statement = prepared[sql] {
            return Self.bindings(arguments, types: statement.parameterTypes).map { Execution(future: statement.query.execute($0), isNamed: true) }
        }
        guard !unnamed.contains(sql), !isPreparingHeld, prepared.count < Self.capacity else { return nil }
        // A mark of the store's own makes the text unique on the connection, so that the
        // lookup of its parameter types finds this statement and no other.
        let text = sql + " /* trackedmodels \(UUID().uuidString) */"
        let preparing = connection.prepare(query: text)
        let listing = connection.query(
            "SELECT array_to_string(parameter_types::oid[], ',') FROM pg_prepared_statements WHERE statement = \(text)",
            logger: logger
        )
        let query: PreparedQuery
        let types: [PostgresDataType]?
        do {
            query = try preparing.wait()
            do {
                types = try Self.parameterTypes(listing.wait())
            } catch {
                query.deallocate().whenComplete { _ in }
                throw error
            }
        } catch {
            isPreparingHeld = true
            return Execution(future: connection.eventLoop.makeFailedFuture(error), isNamed: false)
        }
        guard let types, types.allSatisfy(Self.supportedTypes.contains) else {
            query.deallocate().whenComplete { _ in }
            if unnamed.count < Self.capacity { unnamed.insert(sql) }
            return nil
        }
        let statement = Prepared(query: query, parameterTypes: types)
        prepared[sql] = statement
        return Self.bindings(arguments, types: types).map { Execution(future: statement.query.execute($0), isNamed: true) }
    }

    /// Forgets a statement whose named execution failed (and lets the server drop it): the
    /// next execution prepares it again.
    mutating func forget(_ sql: String) {
        prepared.removeValue(forKey: sql)?.query.deallocate().whenComplete { _ in }
    }

    /// Forgets every prepared statement: one no longer fit, and others made for the same
    /// tables may not either.
    mutating func forgetAll() {
        for statement in prepared.values { statement.query.deallocate().whenComplete { _ in } }
        prepared = [:]
    }

    /// The transaction ended: statements can be prepared again.
    mutating func transactionEnded() {
        isPreparingHeld = false
    }

    /// The parameter types the server lists for the statement; nil when it lists none.
    private static func parameterTypes(_ result: PostgresQueryResult) throws -> [PostgresDataType]? {
        guard result.rows.count == 1, let list = try result.rows.first?.decode(String?.self) else { return nil }
        return list.split(separator: ",").compactMap { UInt32($0).map { PostgresDataType($0) } }
    }

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
