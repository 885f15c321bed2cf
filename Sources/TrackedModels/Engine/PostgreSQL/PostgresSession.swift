import Logging
import Synchronization
import NIOCore
import NIOPosix
import PostgresNIO

/// One connection to PostgreSQL through postgres-nio, owned by one isolation domain at a time
/// (the store's reads, setting up, migrations, copies), which awaits each answer. The database
/// worker's connection is a ``PostgresPipeline``.
///
/// A connection that broke is made again at the next use; the caller hears the failure once,
/// as ``StoreError/Code/connectionLost``.
final class PostgresSession {
    let endpoint: PostgresEndpoint
    private let logger: Logger
    private var connection: PostgresConnection?
    private static let ids = Mutex(0)

    /// What the connection calls itself to the server (`application_name`, as
    /// `pg_stat_activity` lists it).
    private let role: String

    private init(endpoint: PostgresEndpoint, role: String, connection: PostgresConnection, logger: Logger) {
        self.endpoint = endpoint
        self.role = role
        self.connection = connection
        self.logger = logger
    }

    /// Connects, awaiting the server.
    ///
    /// - Parameter role: What the connection is for (`trackedmodels writer`), as
    ///   `pg_stat_activity` shows it.
    static func connect(_ endpoint: PostgresEndpoint, role: String, logger: Logger) async throws -> PostgresSession {
        let connection = try await makeConnection(endpoint, role: role, logger: logger).get()
        return PostgresSession(endpoint: endpoint, role: role, connection: connection, logger: logger)
    }

    /// A new connection to the endpoint, with failures in the store's terms.
    static func makeConnection(_ endpoint: PostgresEndpoint, role: String, logger: Logger) -> EventLoopFuture<PostgresConnection> {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        do {
            let id = ids.withLock { id in
                id += 1
                return id
            }
            var configuration = try endpoint.configuration()
            configuration.options.additionalStartupParameters.append(("application_name", role))
            return PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger)
                .flatMapErrorThrowing { throw PostgresErrors.storeError($0, endpoint: endpoint, doing: "connecting") }
        } catch {
            return eventLoop.makeFailedFuture(PostgresErrors.storeError(error, endpoint: endpoint, doing: "connecting"))
        }
    }

    // MARK: - Awaiting

    /// Runs a statement and returns its rows.
    func rows(_ sql: String, _ arguments: [SQLValue] = [], doing operation: String) async throws -> [[SQLValue]] {
        var used: PostgresConnection?
        do {
            let connection = try await current()
            used = connection
            let result = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: PostgresValues.bindings(arguments)), logger: logger).get()
            return try result.rows.map(PostgresValues.values(of:))
        } catch {
            throw failure(error, doing: operation, on: used)
        }
    }

    /// Runs a statement and returns its columns' names and at most `limit` of its rows (the
    /// rest are not read).
    func result(_ sql: String, _ arguments: [SQLValue] = [], limit: Int?, doing operation: String) async throws -> (columns: [String], rows: [[SQLValue]]) {
        var used: PostgresConnection?
        do {
            let connection = try await current()
            used = connection
            let sequence = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: PostgresValues.bindings(arguments)), logger: logger)
            var rows: [[SQLValue]] = []
            for try await row in sequence {
                if let limit, rows.count >= limit { break }
                rows.append(try PostgresValues.values(of: row))
            }
            return (sequence.columns.map(\.name), rows)
        } catch {
            throw failure(error, doing: operation, on: used)
        }
    }

    private func current() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        if isInTransaction { throw lostInTransaction }
        close()
        let made = try await Self.makeConnection(endpoint, role: role, logger: logger).get()
        // Another read may have connected while this one waited: it uses that one, and closes
        // its own (postgres-nio requires it).
        if let connection, !connection.isClosed {
            Self.close(made)
            return connection
        }
        close()
        self.connection = made
        return made
    }

    /// Whether a transaction is open (``begin(readOnly:doing:)`` to ``end(_:doing:)``): a
    /// connection lost meanwhile is not made again, since statements on a new one
    /// would run outside the transaction.
    private(set) var isInTransaction = false

    /// Begins a transaction, awaiting the server; `readOnly` makes the server refuse writes.
    func begin(readOnly: Bool = false, doing operation: String) async throws {
        _ = try await rows(PostgresPipeline.beginStatement + (readOnly ? " READ ONLY" : ""), doing: operation)
        isInTransaction = true
    }

    /// Begins a read-only transaction whose every statement sees the database as the first one
    /// did (REPEATABLE READ), awaiting the server.
    func beginSnapshot(doing operation: String) async throws {
        _ = try await rows("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", doing: operation)
        isInTransaction = true
    }

    /// Ends the transaction with `COMMIT` or `ROLLBACK`, awaiting the server.
    func end(_ statement: String, doing operation: String) async throws {
        defer { isInTransaction = false }
        _ = try await rows(statement, doing: operation)
    }

    private var lostInTransaction: StoreError {
        StoreError(
            code: .connectionLost,
            message: "the connection to PostgreSQL at \(endpoint) was lost inside a transaction, which the server rolls back; the store tries again",
            mayPass: true
        )
    }

    deinit {
        connection.map(Self.close)
    }

    /// Closes the connection (one the server ended too: postgres-nio requires it); a later use
    /// connects again.
    func close() {
        let connection = self.connection
        self.connection = nil
        connection.map(Self.close)
    }

    /// Closes a connection, which stays alive until the server has been told (postgres-nio
    /// requires a connection to be closed before it goes).
    static func close(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A failure in the store's terms; a connection that broke is dropped, to be made again.
    ///
    /// - Parameter connection: The connection the statement ran on, when known: a newer one
    ///   another read made meanwhile is left alone.
    private func failure(_ error: any Error, doing operation: String, on connection: PostgresConnection? = nil) -> StoreError {
        let error = PostgresErrors.storeError(error, endpoint: endpoint, doing: operation)
        if error.code == .connectionLost, connection == nil || connection === self.connection { close() }
        return error
    }
}
