import Logging
import Synchronization
import NIOCore
import NIOPosix
import PostgresNIO

/// One connection to PostgreSQL, owned by one isolation domain at a time: the database
/// worker's queue, which waits for each answer (it is no event loop, and nothing else runs on
/// it), or the store's reads, which await theirs.
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

    /// Whether the connection is there (it may still break at the next statement).
    var isConnected: Bool { connection.map { !$0.isClosed } ?? false }

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

    // MARK: - Waiting (on the worker's queue)

    /// Runs a statement and returns its rows, waiting for the server.
    ///
    /// - Parameter reused: Whether the statement is one of a few kinds run over and over (the
    ///   writer's), prepared once on the connection (see ``PostgresReusedStatements``).
    func rowsWaiting(_ sql: String, _ arguments: [SQLValue] = [], reused: Bool = false, doing operation: String) throws -> [[SQLValue]] {
        try send(sql, arguments, reused: reused, doing: operation).rows()
    }

    /// A statement sent and not waited for yet.
    struct Answer {
        fileprivate let future: EventLoopFuture<[PostgresRow]>
        /// The connection it was sent on: a statement sent on a connection the server ended
        /// may never be answered, so the wait also ends when the connection is gone.
        fileprivate let connection: PostgresConnection
        /// Whether the rows are in binary form whatever their description says: a statement
        /// prepared through postgres-nio's `prepare(query:)` keeps the text form the server
        /// describes, while every execution asks for binary.
        fileprivate let binary: Bool
        /// The statement, when it ran by name.
        fileprivate let reused: String?
        fileprivate let operation: String
        fileprivate let session: PostgresSession

        /// How often a wait looks whether the connection is gone.
        private static let connectionCheckInterval = TimeAmount.milliseconds(500)

        /// The statement's rows, waiting for the server (or until the connection is gone:
        /// then the failure is the lost connection's).
        func rows() throws -> [[SQLValue]] {
            let rows: [PostgresRow]
            let answered = future.eventLoop.makePromise(of: [PostgresRow].self)
            future.cascade(to: answered)
            let watch = future.eventLoop.scheduleRepeatedTask(initialDelay: Self.connectionCheckInterval, delay: Self.connectionCheckInterval) { [connection] _ in
                // Failing an answered promise does nothing: the answer stands.
                if connection.isClosed { answered.fail(ChannelError.ioOnClosedChannel) }
            }
            defer { watch.cancel() }
            do {
                rows = try answered.futureResult.wait()
            } catch {
                if let reused { throw session.reusedStatementFailed(reused, error, doing: operation) }
                throw session.failure(error, doing: operation)
            }
            do {
                return try rows.map { row in
                    try row.map { cell in
                        var cell = cell
                        if binary { cell.format = .binary }
                        return try PostgresValues.value(of: cell)
                    }
                }
            } catch {
                throw session.failure(error, doing: operation)
            }
        }
    }

    /// A named execution failed. Where the statement no longer fits (a table changed what it
    /// returns, or the server lost it), every statement is prepared again next time and the
    /// failure may pass; else, unless its values or its transaction were the cause (SQLSTATE
    /// classes 22, 23, 25 and 40), that statement is.
    fileprivate func reusedStatementFailed(_ sql: String, _ error: any Error, doing operation: String) -> StoreError {
        var failure = failure(error, doing: operation)
        if PostgresErrors.isStalePreparedStatement(error) {
            reusedStatements.forgetAll()
            failure.message += " (the statement prepared for this no longer fits the table; it is prepared again at the next try)"
            failure.mayPass = true
        } else if !["22", "23", "25", "40"].contains(PostgresErrors.sqlState(of: error)?.prefix(2)) {
            reusedStatements.forget(sql)
        }
        return failure
    }

    /// The writer's statements prepared on the current connection.
    private var reusedStatements = PostgresReusedStatements()

    /// How many statements are prepared on the current connection (for tests).
    var reusedStatementCount: Int { reusedStatements.count }

    /// Statements sent from the worker's queue so far, by what they were for (each one round
    /// trip, a statement prepared the first time aside): how tests count a commit's round trips.
    private(set) var statementsSent: [String: Int] = [:]

    /// Queues a statement without waiting for its answer (postgres-nio sends it once the
    /// statements queued before are answered), so that a run of statements costs the worker
    /// no wait between them; take its answer with ``Answer/rows()``, in the order sent.
    ///
    /// - Parameter reused: Whether the statement is one of a few kinds run over and over (the
    ///   writer's), prepared once on the connection (see ``PostgresReusedStatements``).
    func send(_ sql: String, _ arguments: [SQLValue] = [], reused: Bool = false, doing operation: String) throws -> Answer {
        statementsSent[operation, default: 0] += 1
        do {
            let connection = try currentWaiting()
            if reused, let execution = reusedStatements.execute(sql, arguments, on: connection, logger: logger) {
                return Answer(future: execution.future, connection: connection, binary: true, reused: execution.isNamed ? sql : nil, operation: operation, session: self)
            }
            let future = connection.query(PostgresQuery(unsafeSQL: sql, binds: PostgresValues.bindings(arguments)), logger: logger).map(\.rows)
            return Answer(future: future, connection: connection, binary: false, reused: nil, operation: operation, session: self)
        } catch {
            throw failure(error, doing: operation)
        }
    }

    /// Whether a transaction is open (``begin(doing:)`` to ``end(_:doing:)``, waiting or
    /// awaiting): a connection lost meanwhile is not made again, since statements on a new one
    /// would run outside the transaction.
    private(set) var isInTransaction = false

    /// How a transaction begins: READ COMMITTED whatever the server's default, since each
    /// statement must see what committed before it (the change log's snapshots, increments
    /// that add to what another connection committed).
    private static let beginStatement = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// Begins a transaction, waiting for the server.
    func begin(doing operation: String) throws {
        _ = try rowsWaiting(Self.beginStatement, doing: operation)
        isInTransaction = true
    }

    /// Begins a transaction, awaiting the server; `readOnly` makes the server refuse writes.
    func begin(readOnly: Bool = false, doing operation: String) async throws {
        _ = try await rows(Self.beginStatement + (readOnly ? " READ ONLY" : ""), doing: operation)
        isInTransaction = true
    }

    /// Begins a read-only transaction whose every statement sees the database as the first one
    /// did (REPEATABLE READ), awaiting the server.
    func beginSnapshot(doing operation: String) async throws {
        _ = try await rows("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", doing: operation)
        isInTransaction = true
    }

    /// Ends the transaction with `COMMIT` or `ROLLBACK`, waiting for the server.
    func end(_ statement: String, doing operation: String) throws {
        defer {
            isInTransaction = false
            reusedStatements.transactionEnded()
        }
        _ = try rowsWaiting(statement, doing: operation)
    }

    /// Ends the transaction with `COMMIT` or `ROLLBACK`, awaiting the server.
    func end(_ statement: String, doing operation: String) async throws {
        defer {
            isInTransaction = false
            reusedStatements.transactionEnded()
        }
        _ = try await rows(statement, doing: operation)
    }

    private var lostInTransaction: StoreError {
        StoreError(
            code: .connectionLost,
            message: "the connection to PostgreSQL at \(endpoint) was lost inside a transaction, which the server rolls back; the store tries again",
            mayPass: true
        )
    }

    private func currentWaiting() throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        if isInTransaction { throw lostInTransaction }
        close()
        let connection = try Self.makeConnection(endpoint, role: role, logger: logger).wait()
        self.connection = connection
        return connection
    }

    deinit {
        connection.map(Self.close)
    }

    /// Closes the connection (one the server ended too: postgres-nio requires it); a later use
    /// connects again.
    func close() {
        let connection = self.connection
        self.connection = nil
        reusedStatements = PostgresReusedStatements()
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
    fileprivate func failure(_ error: any Error, doing operation: String, on connection: PostgresConnection? = nil) -> StoreError {
        let error = PostgresErrors.storeError(error, endpoint: endpoint, doing: operation)
        if error.code == .connectionLost, connection == nil || connection === self.connection { close() }
        return error
    }
}
