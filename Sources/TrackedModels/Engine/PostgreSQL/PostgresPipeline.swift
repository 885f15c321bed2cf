import CLibpq
import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The database worker's connection to PostgreSQL, through libpq in pipeline mode: a statement
/// goes to the server at once, without waiting for the answers to the statements before it,
/// and the worker waits only where it needs an answer, on its own thread (no event loop in
/// between). A commit of one update takes three round trips: `BEGIN` with the look at the
/// change log, the update, `COMMIT` (two where the store does not look).
///
/// Outside a transaction each statement runs on its own: a sync follows it, so that it commits
/// alone and its failure ends with it. Inside one, nothing syncs until `COMMIT` or `ROLLBACK`:
/// a statement the server refuses makes it skip every later one (they fail, naming it) until
/// then, so that a write can never commit on its own after a failed `BEGIN`.
///
/// Parameters go as text with no type of their own (see ``PostgresValues``), results come back
/// in binary and are read as the store's other connections read them. Statements run over and
/// over (the writer's) are prepared once per connection and executed by name; the server reads
/// their parameters exactly as it reads an unnamed statement's. One that no longer fits (a
/// table changed what it returns, or the server lost it) drops every prepared statement, and
/// the failure may pass; one that fails for another reason than its values or its transaction
/// (SQLSTATE classes 22, 23, 25, 40) drops that statement.
///
/// Owned by the worker's queue. A connection that broke is made again at the next use outside
/// a transaction; the caller hears the failure once, as ``StoreError/Code/connectionLost``.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/libpq-pipeline-mode.html>
final class PostgresPipeline {
    let endpoint: PostgresEndpoint
    private let connector: LibpqConnector
    private var connection: OpaquePointer?
    /// Counts the connections made: a connection compared before and after a wait is the same
    /// one only if this did not move.
    private var generation = 0

    /// What the server owes, in the order it answers.
    private enum Expected {
        /// A statement's rows; nobody takes those of a statement without a ticket (a
        /// deallocation, a rollback after a skipped `COMMIT`).
        case statement(ticket: Int?, operation: String)
        case begin(operation: String)
        /// `COMMIT`, which fails unless the server says it committed.
        case commit(ticket: Int, operation: String)
        case preparation(sql: String, name: String)
        case sync
    }

    private var expected: [Expected] = []
    private var nextExpected = 0
    /// Statements' outcomes read and not taken yet, by ticket.
    private var answers: [Int: Result<[[SQLValue]], StoreError>] = [:]
    private var nextTicket = 0
    /// The failure that makes the server skip every statement until the next sync.
    private var abortedBy: StoreError?
    /// A statement sent in the open transaction, as it was sent.
    private struct Sent {
        let sql: String
        let arguments: [SQLValue]
        let reused: Bool
        let ticket: Int?
        let operation: String
    }

    /// The statements sent since `BEGIN`, until its answer is read: where the connection turns
    /// out to have been gone before `BEGIN` ran (a server that ended it while it was idle, just
    /// as the transaction began), nothing of the transaction ran, and it is begun again on a
    /// new connection, once.
    private var sinceBegin: [Sent]?
    /// The statement whose answer was read last: outside a transaction it commits at the sync
    /// after it, and a failure there is its own.
    private var lastRead: (ticket: Int?, operation: String)?
    /// The failure of the preparation just read, which the execution after it takes as its own.
    private var failedPreparation: StoreError?
    /// A statement of the open transaction that was never sent (its value cannot travel): the
    /// statements after it fail with it, and `COMMIT` rolls back.
    private var refusal: StoreError?
    /// Whether answers the server holds back (inside a transaction, until asked to flush) are
    /// owed.
    private var answersHeldBack = false
    /// Whether statements went out since the last wait: the next wait is a round trip.
    private var sentSinceWait = false

    /// The statements prepared on the connection, by their SQL: their names.
    private var prepared: [String: String] = [:]
    /// Prepared statements dropped, to be deallocated outside a transaction.
    private var forgotten: [String] = []
    private var nextName = 0
    /// At most this many statements are kept prepared on a connection; later kinds go unnamed.
    static let capacity = 256

    /// How many statements are prepared on the current connection (for tests).
    var reusedStatementCount: Int { prepared.count }

    /// Statements sent so far, by what they were for: how tests count a commit's statements.
    private(set) var statementsSent: [String: Int] = [:]

    /// Waits for answers that needed the server since statements were sent: how tests count a
    /// commit's round trips.
    private(set) var roundTrips = 0

    /// Whether a transaction is open (``begin(doing:)`` to ``end(_:doing:)``): a connection lost
    /// meanwhile is not made again, since statements on a new one would run outside it.
    private(set) var isInTransaction = false

    /// A pipeline that connects at its first statement.
    ///
    /// - Parameter role: What the connection is for (`trackedmodels writer`), as
    ///   `pg_stat_activity` shows it.
    init(endpoint: PostgresEndpoint, role: String, logger: Logger = Logger(label: "trackedmodels.postgres")) {
        self.endpoint = endpoint
        connector = LibpqConnector(endpoint: endpoint, role: role, logger: logger)
    }

    deinit {
        connection.map(PQfinish)
    }

    // MARK: - Statements

    /// Runs a statement and returns its rows, waiting for the server.
    ///
    /// - Parameter reused: Whether the statement is one of a few kinds run over and over (the
    ///   writer's), prepared once on the connection.
    func rowsWaiting(_ sql: String, _ arguments: [SQLValue] = [], reused: Bool = false, doing operation: String) throws -> [[SQLValue]] {
        try send(sql, arguments, reused: reused, doing: operation).rows()
    }

    /// A statement sent and not waited for yet.
    struct Answer {
        fileprivate let ticket: Int
        /// The statement, when it runs by name.
        fileprivate let reused: String?
        fileprivate let pipeline: PostgresPipeline

        /// The statement's rows, waiting for the server (and taking the answers to the
        /// statements sent before it on the way).
        func rows() throws -> [[SQLValue]] {
            do {
                return try pipeline.take(ticket)
            } catch let error as StoreError {
                guard let reused else { throw error }
                throw pipeline.reusedStatementFailed(reused, error)
            }
        }
    }

    /// Sends a statement without waiting for its answer, so that a run of statements costs no
    /// wait between them; take its answer with ``Answer/rows()``.
    ///
    /// - Parameter reused: Whether the statement is one of a few kinds run over and over (the
    ///   writer's), prepared once on the connection.
    /// - Throws: A ``StoreError`` when the connection cannot be made or broke.
    func send(_ sql: String, _ arguments: [SQLValue] = [], reused: Bool = false, doing operation: String) throws -> Answer {
        deallocateForgotten()
        let ticket = nextTicket
        nextTicket += 1
        let answer = Answer(ticket: ticket, reused: reused ? sql : nil, pipeline: self)
        if let refusal {
            answers[ticket] = .failure(skipped(operation, after: refusal))
            return answer
        }
        if arguments.contains(where: Self.holdsNUL) {
            let error = PostgresErrors.storeError(
                ServerError(sqlState: "22021", message: "the text holds U+0000 (byte 0x00), which PostgreSQL's text cannot hold; remove it, or store the value as bytes"),
                endpoint: endpoint, doing: operation
            )
            if isInTransaction { refusal = error }
            answers[ticket] = .failure(error)
            return answer
        }
        try enqueue(sql, arguments, reused: reused, ticket: ticket, doing: operation)
        return answer
    }

    /// How a transaction begins: READ COMMITTED whatever the server's default, since each
    /// statement must see what committed before it (the change log's snapshots, increments
    /// that add to what another connection committed).
    static let beginStatement = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// Begins a transaction without waiting: `BEGIN` travels with the statements after it, and
    /// its failure is theirs.
    func begin(doing operation: String) throws {
        try begin(doing: operation, resending: nil)
    }

    /// - Parameter resending: The statements of a transaction begun again (which is not begun
    ///   a third time).
    private func begin(doing operation: String, resending: [Sent]?) throws {
        _ = try current(doing: operation)
        deallocateForgotten()
        isInTransaction = true
        do {
            try enqueue(Self.beginStatement, [], reused: false, ticket: nil, doing: operation, as: .begin)
            sinceBegin = resending == nil ? [] : nil
            for statement in resending ?? [] {
                try enqueue(statement.sql, statement.arguments, reused: statement.reused, ticket: statement.ticket, doing: statement.operation)
            }
        } catch {
            isInTransaction = false
            sinceBegin = nil
            throw error
        }
    }

    /// Ends the transaction with `COMMIT` or `ROLLBACK`, waiting for the server. A `COMMIT`
    /// after a failed statement rolls back, and fails with that statement's failure.
    func end(_ statement: String, doing operation: String) throws {
        defer {
            isInTransaction = false
            refusal = nil
            sinceBegin = nil
            // Answers nobody took (statements after a failure) go with the transaction.
            answers = [:]
        }
        guard isInTransaction else {
            throw StoreError(code: .engineFailure, message: "\(operation): no transaction is open on the connection to PostgreSQL at \(endpoint)")
        }
        let commits = statement == "COMMIT"
        if commits, let refusal {
            try? end("ROLLBACK", doing: operation)
            throw refusal
        }
        // `BEGIN`'s answer first: the transaction may have to begin again.
        while sinceBegin != nil, connection != nil, nextExpected < expected.count { readNext() }
        let connection = try current(doing: operation)
        let generation = self.generation
        let ticket = nextTicket
        nextTicket += 1
        do {
            // A rollback goes past a refusal: the sync ends the server's skipping.
            if !commits { try sync(connection) }
            try enqueue(statement, [], reused: false, ticket: ticket, doing: operation, as: commits ? .commit : .plain)
            try sync(connection)
        } catch {
            close()
            throw error
        }
        let outcome = Result { try take(ticket) }
        func isCurrent() -> Bool { self.connection != nil && self.generation == generation }
        while isCurrent(), nextExpected < expected.count { readNext() }
        // A COMMIT the server skipped leaves the failed transaction open.
        if isCurrent(), PQtransactionStatus(connection) != PQTRANS_IDLE {
            if (try? enqueue("ROLLBACK", [], reused: false, ticket: nil, doing: operation)) != nil, isCurrent() { try? sync(connection) }
            while isCurrent(), nextExpected < expected.count { readNext() }
        }
        _ = try outcome.get()
    }

    /// Closes the connection; a later statement connects again.
    func close() {
        let connection = self.connection
        self.connection = nil
        expected = []
        nextExpected = 0
        abortedBy = nil
        answersHeldBack = false
        sentSinceWait = false
        prepared = [:]
        forgotten = []
        connection.map(PQfinish)
    }

    // MARK: - Sending

    /// What a statement's answer is to the pipeline.
    private enum Kind {
        case plain, begin, commit
    }

    private func enqueue(_ sql: String, _ arguments: [SQLValue], reused: Bool, ticket: Int?, doing operation: String, as kind: Kind = .plain) throws {
        let connection = try current(doing: operation)
        statementsSent[operation, default: 0] += 1
        sinceBegin?.append(Sent(sql: sql, arguments: arguments, reused: reused, ticket: ticket, operation: operation))
        var name: String?
        if reused {
            if let known = prepared[sql] {
                name = known
            } else if prepared.count < Self.capacity {
                let made = "trackedmodels_\(nextName)"
                nextName += 1
                guard PQsendPrepare(connection, made, sql, 0, nil) == 1 else { throw lost(connection, doing: operation) }
                expected.append(.preparation(sql: sql, name: made))
                prepared[sql] = made
                name = made
            }
        }
        let sent = Self.withParameters(arguments) { values in
            if let name {
                PQsendQueryPrepared(connection, name, Int32(arguments.count), values, nil, nil, 1)
            } else {
                PQsendQueryParams(connection, sql, Int32(arguments.count), nil, values, nil, nil, 1)
            }
        }
        guard sent == 1 else { throw lost(connection, doing: operation) }
        switch (kind, ticket) {
        case (.begin, _): expected.append(.begin(operation: operation))
        case (.commit, let ticket?): expected.append(.commit(ticket: ticket, operation: operation))
        default: expected.append(.statement(ticket: ticket, operation: operation))
        }
        sentSinceWait = true
        if isInTransaction {
            answersHeldBack = true
            try flush(connection, doing: operation)
        } else {
            try sync(connection)
        }
    }

    /// Ends the run of statements the server skips after a failure, and has it send what it
    /// holds.
    private func sync(_ connection: OpaquePointer) throws {
        guard PQpipelineSync(connection) == 1 else { throw lost(connection, doing: "syncing") }
        expected.append(.sync)
        answersHeldBack = false
        try flush(connection, doing: "syncing")
    }

    /// Sends what libpq holds, reading what the server answers meanwhile (a server whose
    /// answers nobody reads stops reading statements).
    private func flush(_ connection: OpaquePointer, doing operation: String) throws {
        while true {
            switch PQflush(connection) {
            case 0:
                return
            case 1:
                var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN | POLLOUT), revents: 0)
                guard poll(&descriptor, 1, -1) >= 0 || errno == EINTR else { throw lost(connection, doing: operation) }
                if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(connection) == 0 { throw lost(connection, doing: operation) }
            default:
                throw lost(connection, doing: operation)
            }
        }
    }

    /// Calls `body` with the values as libpq takes them: each as a C string of its text (nil
    /// for NULL). Results are asked for in binary (the `1` of each send).
    private static func withParameters(_ arguments: [SQLValue], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> Int32) -> Int32 {
        guard !arguments.isEmpty else { return body(nil) }
        let texts = arguments.map { PostgresValues.parameterText($0).map { strdup($0) } ?? nil }
        defer { texts.forEach { free($0) } }
        return texts.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    /// Whether a value is text holding U+0000, which a C string cannot carry (and PostgreSQL's
    /// text cannot hold).
    private static func holdsNUL(_ value: SQLValue) -> Bool {
        if case .text(let text) = value { text.utf8.contains(0) } else { false }
    }

    // MARK: - Answers

    /// Reads answers in order until the ticket's is there.
    private func take(_ ticket: Int) throws -> [[SQLValue]] {
        while answers[ticket] == nil {
            guard connection != nil, nextExpected < expected.count else {
                throw StoreError(
                    code: .connectionLost,
                    message: "the statement on PostgreSQL at \(endpoint) has no answer to take: the connection closed, or its transaction ended, before it was taken; the store tries again",
                    mayPass: true
                )
            }
            readNext()
        }
        // Outside a transaction the statement commits at the sync after it: its answer stands
        // once that is read.
        while !isInTransaction, connection != nil, nextExpected < expected.count, case .sync = expected[nextExpected] { readNext() }
        return try answers.removeValue(forKey: ticket)!.get()
    }

    /// Reads the next answer the server owes, and records it. A connection lost on the way
    /// fails every answer still owed.
    private func readNext() {
        guard let connection else { return }
        let entry = expected[nextExpected]
        if answersHeldBack {
            answersHeldBack = false
            do {
                guard PQsendFlushRequest(connection) == 1 else { throw lost(connection, doing: "reading") }
                try flush(connection, doing: "reading")
            } catch {
                return connectionBroke(error as? StoreError ?? lostInTransaction, reading: entry)
            }
        }
        if sentSinceWait {
            sentSinceWait = false
            roundTrips += 1
        }
        guard let result = PQgetResult(connection) else {
            return connectionBroke(lost(connection, doing: "reading"), reading: entry)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        if case .sync = entry {
            guard status != PGRES_PIPELINE_SYNC else {
                abortedBy = nil
                advance()
                return
            }
            // Outside a transaction, the statement before the sync commits there: a failure
            // (a deferred constraint, a serialization failure) or a lost connection is its own.
            let operation = lastRead?.operation ?? "committing"
            let failure: StoreError
            if status == PGRES_FATAL_ERROR, PQstatus(connection) == CONNECTION_OK, let server = ServerError(result) {
                failure = PostgresErrors.storeError(server, endpoint: endpoint, doing: operation)
            } else {
                failure = lost(connection, doing: operation)
            }
            if let ticket = lastRead?.ticket, answers[ticket] != nil { answers[ticket] = .failure(failure) }
            guard self.connection != nil, !(ServerError(result)?.endsTheConnection ?? false), PQgetResult(connection) == nil else {
                return failEverything(failure)
            }
            // The sync's own result comes next.
            abortedBy = failure
            return
        }
        let operation: String
        switch entry {
        case .statement(_, let doing), .begin(let doing), .commit(_, let doing): operation = doing
        case .preparation: operation = "preparing a statement"
        case .sync: return
        }
        let outcome: Result<[[SQLValue]], StoreError>
        switch status {
        case PGRES_COMMAND_OK where String(cString: PQcmdStatus(result)) == "ROLLBACK":
            if case .commit = entry {
                // A COMMIT of a transaction that had failed: the server rolled it back.
                outcome = .failure(StoreError(
                    code: .engineFailure, message: "\(operation) failed on PostgreSQL at \(endpoint): the server rolled the transaction back instead; the store tries again", mayPass: true
                ))
            } else {
                outcome = .success([])
            }
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            outcome = Result { try Self.rows(of: result) }.mapError { PostgresErrors.storeError($0, endpoint: endpoint, doing: operation) }
        case PGRES_PIPELINE_ABORTED:
            // A statement whose own preparation failed fails with that failure.
            outcome = .failure(failedPreparation ?? skipped(operation, after: abortedBy))
        default:
            guard PQstatus(connection) == CONNECTION_OK, let server = ServerError(result) else {
                return connectionBroke(lost(connection, doing: operation), reading: entry)
            }
            let error = PostgresErrors.storeError(server, endpoint: endpoint, doing: operation)
            // The server ends the connection after a FATAL error (an administrator's
            // `pg_terminate_backend`, a shutdown).
            guard !server.endsTheConnection else { return connectionBroke(error, reading: entry) }
            abortedBy = error
            outcome = .failure(error)
        }
        // A statement's results end with a null.
        if let extra = PQgetResult(connection) {
            PQclear(extra)
            return failEverything(StoreError(code: .engineFailure, message: "PostgreSQL at \(endpoint) answered \(operation) with more than one result; the connection is closed"))
        }
        advance()
        failedPreparation = nil
        switch entry {
        case .statement(let ticket, let operation):
            if let ticket { answers[ticket] = outcome }
            lastRead = (ticket, operation)
        case .commit(let ticket, let operation):
            answers[ticket] = outcome
            lastRead = (ticket, operation)
        case .begin:
            sinceBegin = nil
        case .preparation(let sql, let name):
            guard case .failure(let error) = outcome else { break }
            if prepared[sql] == name { prepared[sql] = nil }
            if status == PGRES_FATAL_ERROR { failedPreparation = error }
        case .sync:
            break
        }
    }

    /// The failure of a statement skipped because an earlier one of its transaction failed.
    private func skipped(_ operation: String, after failure: StoreError?) -> StoreError {
        let cause = failure.map { " (\($0.message))" } ?? ""
        return PostgresErrors.storeError(
            ServerError(sqlState: "25P02", message: "the transaction was aborted by an earlier statement's failure\(cause), so this one did not run"),
            endpoint: endpoint, doing: operation
        )
    }

    private func advance() {
        nextExpected += 1
        if nextExpected == expected.count {
            expected.removeAll(keepingCapacity: true)
            nextExpected = 0
        }
    }

    /// The connection broke while `entry`'s answer was owed: a transaction whose `BEGIN` never
    /// ran is begun again on a new connection (once); else every answer still owed fails.
    private func connectionBroke(_ error: StoreError, reading entry: Expected) {
        guard case .begin(let operation) = entry, let statements = sinceBegin, error.code == .connectionLost else { return failEverything(error) }
        close()
        isInTransaction = false
        sinceBegin = nil
        do {
            try begin(doing: operation, resending: statements)
        } catch {
            let failure = error as? StoreError ?? lostInTransaction
            for ticket in statements.compactMap(\.ticket) where answers[ticket] == nil { answers[ticket] = .failure(failure) }
            // Still in the transaction, with no connection: nothing more is sent until the
            // caller ends it (its rollback clears what it left).
            close()
            isInTransaction = true
        }
    }

    /// Fails every answer still owed, and drops the connection.
    private func failEverything(_ error: StoreError) {
        for entry in expected[nextExpected...] {
            switch entry {
            case .statement(let ticket?, _), .commit(let ticket, _): answers[ticket] = .failure(error)
            default: break
            }
        }
        close()
    }

    // MARK: - Prepared statements

    /// A named execution failed: see the type's documentation for what is dropped.
    fileprivate func reusedStatementFailed(_ sql: String, _ error: StoreError) -> StoreError {
        var failure = error
        if PostgresErrors.isStalePreparedStatement(error.underlying ?? error) {
            forgotten += prepared.values
            prepared = [:]
            failure.message += " (the statement prepared for this no longer fits the table; it is prepared again at the next try)"
            failure.mayPass = true
        } else if !["22", "23", "25", "40"].contains(PostgresErrors.sqlState(of: error)?.prefix(2)), let name = prepared.removeValue(forKey: sql) {
            forgotten.append(name)
        }
        return failure
    }

    /// Lets the server drop the statements forgotten (outside a transaction; a failure, such
    /// as a statement the server lost already, is nobody's).
    private func deallocateForgotten() {
        guard !isInTransaction else { return }
        while let name = forgotten.popLast() {
            guard (try? enqueue("DEALLOCATE \(name)", [], reused: false, ticket: nil, doing: "dropping a prepared statement")) != nil else { return }
        }
    }

    // MARK: - The connection

    private var lostInTransaction: StoreError {
        StoreError(
            code: .connectionLost,
            message: "the connection to PostgreSQL at \(endpoint) was lost inside a transaction, which the server rolls back; the store tries again",
            mayPass: true
        )
    }

    /// The connection, made where there is none or where it broke while idle (outside a
    /// transaction).
    private func current(doing operation: String) throws -> OpaquePointer {
        if let connection {
            if isInTransaction { return connection }
            if PQstatus(connection) == CONNECTION_OK, !hasSpokenWhileIdle(connection) { return connection }
        }
        if isInTransaction { throw lostInTransaction }
        close()
        let made = try connector.connect()
        connection = made
        generation += 1
        return made
    }

    /// Whether the server sent something while the connection owed nothing: it ended it (an
    /// administrator's `pg_terminate_backend`, a restart), or something else the writer never
    /// asked for. Either way the connection is made again before anything is sent on it.
    private func hasSpokenWhileIdle(_ connection: OpaquePointer) -> Bool {
        guard nextExpected == expected.count else { return false }
        var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) != 0
    }

    /// The connection's failure, in the store's terms; the connection is dropped.
    private func lost(_ connection: OpaquePointer, doing operation: String) -> StoreError {
        let error = PostgresErrors.storeError(ConnectionFailure(connection), endpoint: endpoint, doing: operation)
        close()
        return error
    }
}
