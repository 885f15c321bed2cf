import Dispatch
import Foundation
import Logging
import Synchronization

/// The writing half of the PostgreSQL engine: the writer's own connection (a
/// ``PostgresPipeline``), waited on from the database worker's queue; the change log; and the
/// doorbell.
///
/// Each commit is one transaction: read what others committed (the change log's window) and
/// note the transaction's id (its log entries are the store's own) in one statement, write the
/// units, commit. `BEGIN` travels with the look, and the statements of the units go without
/// waiting for each other's answers: three round trips for a commit of one statement (the
/// look, the statement, `COMMIT`), two for a store that does not look (whose transaction id
/// comes with the statement). A connection lost at `COMMIT` leaves the outcome
/// unknown: the writer asks the server for the transaction's status once it reconnects,
/// however long that takes, so that a commit that went through is not made twice (an
/// increment would count double).
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/functions-info.html#FUNCTIONS-PG-SNAPSHOT>
final class PostgreSQLWriter: EngineWriter {
    private let session: PostgresPipeline
    private let tables: [TableSchema]
    /// Each table's `VARCHAR(n)` columns and their n (see ``refuseOverlongText(_:)``).
    private let characterLimits: [[Int: Int]]
    /// Each table's columns' types, for the values of a batched update
    /// (``PostgreSQLUpdateBatch``).
    private let castTypes: [[String]]
    private let changeLog: PostgreSQLChangeLogReader?
    private let actionTargets: Set<Int>
    /// Each table's to-one columns, where placeholders of assigned keys may stand.
    private let linkColumns: [[Int]]
    /// The table each to-one column's declared foreign key points at (``KeyedInserts``).
    private let linkTargets: LinkTargets
    private let logger: Logger
    /// Whether a doorbell listens for other connections' commits (else the poll alone finds them).
    private let listensForCommits: Bool
    private var doorbell: CommitDoorbell?
    /// The message of the last repair of the change log that failed, until one succeeds: the
    /// same failure is published once.
    private var lastRepairFailure: String?
    private var isClosed = false

    init(
        session: PostgresPipeline, tables: [TableSchema], characterLimits: [[Int: Int]], castTypes: [[String]], changeLog: PostgreSQLChangeLogReader?, actionTargets: Set<Int>,
        linkTargets: LinkTargets, listensForCommits: Bool, logger: Logger
    ) {
        self.session = session
        self.characterLimits = characterLimits
        self.castTypes = castTypes
        self.listensForCommits = listensForCommits
        self.tables = tables
        linkColumns = tables.map(\.relationshipColumns)
        self.linkTargets = linkTargets
        self.changeLog = changeLog
        self.actionTargets = actionTargets
        self.logger = logger
    }

    /// Commits with runs of updates batched (``PostgreSQLUpdateBatch``); where the database
    /// refuses a batch, which cannot say which row it refused, the commit is made again
    /// statement by statement, so that the refusal is the operation's that caused it.
    ///
    /// The second try does not look at the change log again: it keeps what the first one's look
    /// read (and a repair it made, which committed on its own), and goes back to before that
    /// look only if it fails too.
    func commit(_ units: [WriteUnit], rows: BulkRows?, earlierKeys: [UInt64: SQLValue], willCommit: (CommitReport) throws -> Void) throws -> EngineCommit {
        let position = changeLog?.position
        do {
            return try commit(units, rows: rows, earlierKeys: earlierKeys, batchingUpdates: true, from: position, willCommit: willCommit)
        } catch let refused as BatchRefused {
            return try commit(units, rows: rows, earlierKeys: earlierKeys, batchingUpdates: false, from: position, looked: refused.looked, willCommit: willCommit)
        }
    }

    /// The database refused a batched update (and the transaction was rolled back), after the
    /// look read `looked`.
    private struct BatchRefused: Error {
        var looked = ExternalChangeBatch()
    }

    /// - Parameters:
    ///   - position: Where the change log's reader goes back to when the commit fails.
    ///   - looked: What an earlier try's look read, for a try that does not look again.
    private func commit(
        _ units: [WriteUnit], rows: BulkRows?, earlierKeys: [UInt64: SQLValue], batchingUpdates: Bool,
        from position: PostgreSQLChangeLogReader.Position?, looked: ExternalChangeBatch? = nil, willCommit: (CommitReport) throws -> Void
    ) throws -> EngineCommit {
        guard !isClosed else { throw EngineFailure.transaction(StoreError.closed(operation: "commit")) }
        do {
            try session.begin(doing: "beginning a transaction")
        } catch let error as StoreError {
            throw EngineFailure.transaction(error)
        }
        var commit = EngineCommit(report: CommitReport(), external: ExternalChangeBatch())
        // The transaction's id, when the look gave it one.
        var transaction: UInt64?
        // Where no look gives the transaction its id, a statement sent with `BEGIN` does, and
        // its answer comes with the first wait (taken before any operation's, so that a
        // failure of the transaction is not taken for an operation's).
        var assigning: PostgresPipeline.Answer?
        // What the look read (before the database's own actions on this commit's deletes join it).
        var read = looked ?? ExternalChangeBatch()
        do {
            do {
                if looked == nil, let changeLog {
                    let found = try look(changeLog, inCommit: true)
                    read = found.batch ?? ExternalChangeBatch()
                    transaction = found.transaction
                } else {
                    assigning = try session.send("SELECT pg_current_xact_id()::text", doing: "beginning a transaction")
                }
                commit.external = read
            } catch let error as StoreError {
                throw EngineFailure.transaction(error)
            }
            // Statements are sent without waiting for each answer; their answers are taken in
            // order, and the first failure is the operation's.
            // A delete the database acts on runs alone, bracketed by reads of the log.
            // An insert given a key moves the key sequence past it in the statement sent next,
            // so that a key the database assigns later in the same run does not collide.
            // Runs of updates wait in `batch` until an operation that cannot join comes (or an
            // answer is needed), then go as one statement.
            var sent: [(unit: Int, operation: Int, write: WriteOperation?, answer: PostgresPipeline.Answer)] = []
            var sentBatches: [(batch: PostgreSQLUpdateBatch, answer: PostgresPipeline.Answer, at: Int)] = []
            var batch: PostgreSQLUpdateBatch?
            func sendBatch() throws {
                guard let waiting = batch else { return }
                batch = nil
                let first = waiting.members[0]
                do {
                    guard waiting.members.count > 1 else {
                        let statement = statement(for: first.write)
                        sent.append((first.unit, first.operation, first.write, try session.send(statement.sql, statement.arguments, reused: true, doing: statement.doing)))
                        return
                    }
                    let statement = waiting.statement(tables[waiting.table], castTypes: castTypes[waiting.table])
                    let answer = try session.send(statement.sql, statement.arguments, doing: statement.doing)
                    // Its place in `sent` keeps the answers in the order sent.
                    sentBatches.append((waiting, answer, sent.count))
                    sent.append((first.unit, first.operation, nil, answer))
                } catch let error as StoreError {
                    throw EngineFailure.operation(unit: first.unit, operation: first.operation, error)
                }
            }
            func takeAnswers() throws {
                try sendBatch()
                if let answer = assigning {
                    assigning = nil
                    do {
                        if case .text(let text) = try answer.rows().first?.first { transaction = UInt64(text) }
                    } catch let error as StoreError {
                        throw EngineFailure.transaction(error)
                    }
                }
                defer {
                    sent = []
                    sentBatches = []
                }
                var batches = sentBatches[...]
                for (index, statement) in sent.enumerated() {
                    if let (batched, answer, at) = batches.first, at == index {
                        batches = batches.dropFirst()
                        try record(batched, answer: answer, into: &commit.report)
                        continue
                    }
                    do {
                        let rows = try statement.answer.rows()
                        if let write = statement.write { try record(write, rows: rows, into: &commit.report) }
                    } catch let error as StoreError {
                        throw EngineFailure.operation(unit: statement.unit, operation: statement.operation, error)
                    }
                }
            }
            // Before the first insert whose key the database assigns, its sequence catches up
            // with keys other connections gave explicitly, and with the keys this commit gives
            // (an insert given key 1 after one without a key must not meet the key 1 it got).
            var caughtUp: Set<Int> = []
            let givenKeys = PostgreSQLKeySequence.largestGivenKeys(in: units)
            // Links whose target's insert comes later in the transaction (see ``DeferredLink``).
            var waiting = WaitingLinks()
            let keyedInserts = KeyedInserts(units, targets: linkTargets)
            var position = -1
            func assignedKey(_ request: UInt64) -> SQLValue? { commit.report.assignedKeys[request] ?? earlierKeys[request] }
            for (unitIndex, unit) in units.enumerated() {
                for (operationIndex, written) in unit.operations.enumerated() {
                    position += 1
                    // A placeholder's key may be in an answer not taken yet.
                    if !sent.isEmpty || batch != nil, written.placeholderRequests(linkColumns: linkColumns).contains(where: { assignedKey($0) == nil }) { try takeAnswers() }
                    let (operation, deferred) = written.resolvingPlaceholders(linkColumns: linkColumns, later: keyedInserts, at: position, assignedKey)
                    waiting.drop(overwrittenBy: operation, keys: commit.report.assignedKeys)
                    waiting.add(deferred, unit: unitIndex, operation: operationIndex)
                    let batches = if batchingUpdates, case .update = operation { true } else { false }
                    // Every statement goes after the updates waiting before it.
                    if !batches { try sendBatch() }
                    if case .insert(let request) = operation, request.row == nil, caughtUp.insert(request.table).inserted {
                        let catchUp = PostgreSQLKeySequence.catchUp(tables[request.table], past: givenKeys[request.table])
                        sent.append((unitIndex, operationIndex, nil, try session.send(catchUp.sql, catchUp.arguments, reused: true, doing: catchUp.doing)))
                    }
                    if changeLog != nil, let deleted = deletedActionTarget(operation) {
                        try takeAnswers()
                        do {
                            // What the database does to other rows on its own as this delete runs
                            // (a cascade, a SET NULL) is heard as another connection's change.
                            let before = try newestOwnSequence()
                            try apply(operation, into: &commit.report)
                            commit.external.add(try actions(ofDeleteOf: deleted.row, table: deleted.table, after: before))
                        } catch let error as StoreError {
                            throw EngineFailure.operation(unit: unitIndex, operation: operationIndex, error)
                        }
                    } else {
                        let statement = statement(for: operation)
                        do {
                            try refuseOverlongText(operation)
                        } catch let error as StoreError {
                            // A statement sent before it may fail first: that is the refusal.
                            try takeAnswers()
                            throw EngineFailure.operation(unit: unitIndex, operation: operationIndex, error)
                        }
                        if batches {
                            if batch?.add(operation, unit: unitIndex, operation: operationIndex) != true {
                                try sendBatch()
                                batch = PostgreSQLUpdateBatch(operation, unit: unitIndex, operation: operationIndex)
                            }
                            continue
                        }
                        do {
                            sent.append((unitIndex, operationIndex, operation, try session.send(statement.sql, statement.arguments, reused: true, doing: statement.doing)))
                            if let advance = PostgreSQLKeySequence.advance(after: operation, tables: tables) {
                                sent.append((unitIndex, operationIndex, nil, try session.send(advance.sql, advance.arguments, reused: true, doing: advance.doing)))
                            }
                        } catch let error as StoreError {
                            throw EngineFailure.operation(unit: unitIndex, operation: operationIndex, error)
                        }
                    }
                    if !waiting.isEmpty, case .insert(let request) = operation, request.row == nil || waiting.waits(forInsert: request.id) {
                        try takeAnswers()
                        try writeLinks(waiting.takeReady(keys: commit.report.assignedKeys) { keyedInserts.key(ofInsert: $0, through: position) })
                    }
                }
            }
            try takeAnswers()
            if let rows {
                do {
                    try insert(rows, into: &commit.report)
                } catch let error as StoreError {
                    throw EngineFailure.transaction(error)
                }
            }
            do {
                try willCommit(commit.report)
                let xid = try transaction ?? assignedTransaction()
                try finishCommit(xid)
                if let xid { changeLog?.noteOwnTransaction(xid) }
            } catch let error as StoreError {
                throw EngineFailure.transaction(error)
            }
            return commit
        } catch is BatchRefused {
            if session.isInTransaction { try? session.end("ROLLBACK", doing: "rolling back") }
            throw BatchRefused(looked: read)
        } catch {
            if session.isInTransaction { try? session.end("ROLLBACK", doing: "rolling back") }
            if let position { changeLog?.rewind(to: position) }
            throw error
        }
    }

    /// The transaction's id, if its writes gave it one: asked for where no look did.
    private func assignedTransaction() throws -> UInt64? {
        let transaction = try session.rowsWaiting("SELECT pg_current_xact_id_if_assigned()::text", doing: "committing").first?.first
        return if case .text(let text) = transaction { UInt64(text) } else { nil }
    }

    /// Writes links that waited for their target's key (see ``WaitingLinks``); a row deleted
    /// since has nothing to write. A refusal is the operation's that made the link.
    private func writeLinks(_ ready: [WaitingLinks.Ready]) throws {
        for link in ready {
            let schema = tables[link.link.table]
            let sql = "UPDATE \(quoteIdentifier(schema.name)) SET \(quoteIdentifier(schema.columns[link.link.column].name)) = $1 WHERE \(quoteIdentifier(schema.primaryKey.name)) = $2"
            do {
                _ = try session.rowsWaiting(sql, [link.key, link.row], reused: true, doing: "linking a row of \(schema.name) to a new row")
            } catch let error as StoreError {
                throw EngineFailure.operation(unit: link.unit, operation: link.operation, error)
            }
        }
    }

    /// Commits; when the connection is lost on the way, asks new ones whether the transaction
    /// committed, and succeeds if it did: trying a commit that went through again would count
    /// its increments twice.
    ///
    /// While the server cannot be reached, it keeps asking (a warning each minute): nobody
    /// else can tell, and the changes stay in flight meanwhile. A server that answers "in
    /// progress" for longer than ``outcomeWait`` (its end of the lost connection not yet
    /// ended) makes it give up.
    ///
    /// - Throws: The connection's loss when the transaction did not commit (the store tries
    ///   again), or a failure that does not pass on its own when the server kept the
    ///   transaction open, no longer knows it, or refused to say (a person has to look).
    private func finishCommit(_ xid: UInt64?) throws {
        do {
            try session.end("COMMIT", doing: "committing")
        } catch let error as StoreError where error.code == .connectionLost {
            guard let xid else { throw error }
            let lost = ContinuousClock.now
            logger.notice("the connection was lost at COMMIT; asking the server whether the transaction committed", metadata: ["xid": "\(xid)"])
            var answeredOpen: ContinuousClock.Instant?
            var warned = lost
            var pause = Duration.milliseconds(50)
            func unknown(_ why: String, underlying: (any Error)? = nil) -> StoreError {
                StoreError(
                    code: .engineFailure,
                    message: "the connection to PostgreSQL at \(session.endpoint) was lost at COMMIT, and \(why); the changes stay pending: check the data, then flush again or discard them",
                    underlying: underlying
                )
            }
            while true {
                // nil while the server cannot be reached; NULL for an id too old to look up.
                let status: SQLValue?
                do {
                    status = try session.rowsWaiting("SELECT pg_xact_status($1::text::xid8)", [.text(String(xid))], doing: "checking a commit").first?.first ?? .null
                } catch let failure as StoreError where failure.code == .connectionLost {
                    status = nil
                    if ContinuousClock.now - warned >= .seconds(60) {
                        warned = .now
                        logger.warning(
                            "the connection was lost at COMMIT; waiting for the server to say whether the transaction committed",
                            metadata: ["xid": "\(xid)", "for": "\(ContinuousClock.now - lost)", "error": "\(failure)"]
                        )
                    }
                } catch {
                    throw unknown("asking whether transaction \(xid) committed failed (\(error))", underlying: error)
                }
                switch status {
                case .text("committed")?:
                    logger.notice("the transaction whose COMMIT lost its connection committed", metadata: ["xid": "\(xid)", "after": "\(ContinuousClock.now - lost)"])
                    return
                case .text("aborted")?:
                    throw error
                case .null?:
                    throw unknown("the server no longer knows whether transaction \(xid) committed")
                case .some:
                    let since = answeredOpen ?? .now
                    answeredOpen = since
                    if ContinuousClock.now - since >= outcomeWait {
                        throw unknown("the server still held transaction \(xid) open after \(outcomeWait)")
                    }
                case nil:
                    answeredOpen = nil
                }
                Thread.sleep(forTimeInterval: pause.timeInterval)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    /// Statements the writer has sent, for tests (see ``PostgresPipeline/statementsSent``).
    var statementsSent: [String: Int] { session.statementsSent }

    /// The writer's waits for the server, for tests (see ``PostgresPipeline/roundTrips``).
    var roundTrips: Int { session.roundTrips }

    /// How long a server that answers may keep a transaction whose connection was lost at
    /// `COMMIT` open before the writer gives up: as long as the server's end takes to notice
    /// the connection is gone (its keepalives unanswered, or its answer not acknowledged), and
    /// 30 s more.
    private var outcomeWait: Duration {
        let liveness = session.endpoint.liveness
        return .seconds(max(liveness.idle + liveness.interval * liveness.count, liveness.userTimeout / 1_000) + 30)
    }

    /// The row (or, for a delete of every row, the table) an operation deletes, when the
    /// database acts on the deletion of that table's rows.
    private func deletedActionTarget(_ operation: WriteOperation) -> (row: RowReference?, table: Int)? {
        switch operation {
        case .delete(let row) where actionTargets.contains(row.table): (row, row.table)
        case .deleteAll(let table) where actionTargets.contains(table): (nil, table)
        default: nil
        }
    }

    /// The newest log entry this transaction can see: the entries a statement adds come after.
    private func newestOwnSequence() throws -> Int64 {
        let newest = try session.rowsWaiting("SELECT coalesce(max(seq), 0) FROM \(PostgreSQLChangeLog.table)", doing: "reading the change log")
        if case .integer(let sequence) = newest.first?.first { return sequence }
        return 0
    }

    /// What the database did on its own while one of this store's deletes ran: this
    /// transaction's entries past `after`, but for the deleted row (or, for a delete of every
    /// row, the table's rows), merged and reloaded as another connection's changes are.
    private func actions(ofDeleteOf deleted: RowReference?, table: Int, after: Int64) throws -> ExternalChangeBatch {
        let rows = try session.rowsWaiting(
            "SELECT tbl, row_key, kind, mask FROM \(PostgreSQLChangeLog.table) WHERE seq > $1 AND xid = pg_current_xact_id() ORDER BY seq",
            [.integer(after)], doing: "reading the change log"
        )
        let entries = rows.compactMap { row -> ChangeLogEntries.Entry? in
            guard case .text(let name) = row[0], let entryTable = tables.firstIndex(where: { $0.name == name }),
                  case .integer(let kind) = row[2], case .integer(let mask) = row[3]
            else { return nil }
            let key: SQLValue = if case .text(let text) = row[1] { PostgreSQLChangeLog.key(text, type: tables[entryTable].primaryKey.type) } else { .null }
            if let deleted, RowReference(table: entryTable, key: key) == deleted { return nil }
            if deleted == nil, entryTable == table { return nil }
            return ChangeLogEntries.Entry(table: entryTable, key: key, kind: kind, mask: mask)
        }
        var batch = ExternalChangeBatch()
        try changeLog?.merge(entries, into: &batch, on: session)
        return batch
    }

    func readRows(table: Int, keys: [SQLValue]) throws -> [[SQLValue]?] {
        guard !isClosed else { throw StoreError.closed(operation: "read rows") }
        let found = try PostgreSQLChangeLogReader.rows(of: tables[table], keys: keys, on: session)
        return keys.map { found[$0] }
    }

    func readChangeLog(answeringSignal: Bool) throws -> ExternalChangeBatch? {
        guard !isClosed, let changeLog else { return nil }
        let position = changeLog.position
        do {
            return try look(changeLog, answeringSignal: answeringSignal).batch
        } catch {
            // A failed read is retried on the next look: the position only moves on success.
            changeLog.rewind(to: position)
            throw error
        }
    }

    /// Records the store's place in the log when due; not while the log needs a repair that
    /// failed (the horizon would hold the log for a store that reads nothing of it).
    func tidyChangeLog() {
        guard !isClosed, let changeLog, !changeLog.needsRepair else { return }
        try? changeLog.recordIfDue(on: session)
    }

    /// Reads what others committed since the last look (as the first statement of the
    /// commit's transaction, or alone).
    ///
    /// A look that finds the change log gone or changed (see
    /// ``PostgreSQLChangeLogReader/repair(on:)``) has it mended in a transaction of its own, so
    /// that the repair's locks and its reset reach the other stores at once; a commit's
    /// transaction, in which nothing was written yet, is rolled back first and begun again
    /// after. A repair the server refuses is published once (the reader stays where it was,
    /// and every look tries again).
    ///
    /// - Parameters:
    ///   - inCommit: Whether the look is the first statement of a commit's transaction: it
    ///     then gives the transaction its id, returned with what it read (nil where a repair
    ///     began the transaction again and no look followed).
    ///   - answeringSignal: Whether the look answers the log's notification (see
    ///     ``PostgreSQLChangeLogReader/collect(on:inCommit:answeringSignal:)``).
    private func look(_ changeLog: PostgreSQLChangeLogReader, inCommit: Bool = false, answeringSignal: Bool = false) throws -> (batch: ExternalChangeBatch?, transaction: UInt64?) {
        let position = changeLog.position
        do {
            let batch = try changeLog.collect(on: session, inCommit: inCommit, answeringSignal: answeringSignal)
            guard changeLog.needsRepair else { return (batch, changeLog.lookTransaction) }
        } catch let error as StoreError where PostgreSQLChangeLogReader.isLogGone(error) {
            // The look is made again once the log is mended, from where it was.
            changeLog.rewind(to: position)
        }
        let inTransaction = session.isInTransaction
        if inTransaction { try session.end("ROLLBACK", doing: "beginning a transaction") }
        let (repaired, mended) = try repair(changeLog)
        if inTransaction { try session.begin(doing: "beginning a transaction") }
        guard mended else { return (repaired, nil) }
        var batch = try changeLog.collect(on: session, inCommit: inCommit) ?? ExternalChangeBatch()
        batch.add(repaired)
        return (batch, changeLog.lookTransaction)
    }

    /// Runs ``PostgreSQLChangeLogReader/repair(on:)`` in a transaction of its own. A refusal
    /// (a lost connection aside, which fails the look) is in the batch's `logFailure` the
    /// first time it is met, and `mended` is false.
    private func repair(_ changeLog: PostgreSQLChangeLogReader) throws -> (batch: ExternalChangeBatch, mended: Bool) {
        let position = changeLog.position
        let doing = "installing the change log again"
        do {
            try session.begin(doing: doing)
            let batch = try changeLog.repair(on: session)
            try session.end("COMMIT", doing: doing)
            lastRepairFailure = nil
            return (batch, true)
        } catch let error as StoreError {
            changeLog.rewind(to: position)
            if session.isInTransaction { try? session.end("ROLLBACK", doing: doing) }
            guard error.code != .connectionLost else { throw error }
            var batch = ExternalChangeBatch()
            if lastRepairFailure != error.message { batch.logFailure = error }
            lastRepairFailure = error.message
            return (batch, false)
        }
    }

    /// Wakes the worker once for the rings that come while a wake is waiting on its queue: the
    /// look it makes reads their commits too. The wait ends as the wake begins, before its look,
    /// so a commit rung after that brings a look of its own.
    func watchForCommits(on queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
        guard changeLog != nil, listensForCommits, doorbell == nil, !isClosed else { return }
        let waiting = WaitingWake()
        doorbell = CommitDoorbell(endpoint: session.endpoint, logger: logger) {
            guard !waiting.isWaiting.exchange(true, ordering: .sequentiallyConsistent) else { return }
            queue.async {
                waiting.isWaiting.store(false, ordering: .sequentiallyConsistent)
                wake()
            }
        }
    }

    /// True: PostgreSQL notifies listeners once the committing transaction is visible to new
    /// snapshots (after it leaves the running transactions).
    var signalsReadableCommits: Bool { true }

    /// Whether a wake is on the worker's queue and has not begun.
    private final class WaitingWake: Sendable {
        let isWaiting = Atomic(false)
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        doorbell?.stop()
        doorbell = nil
        changeLog?.forget(on: session)
        session.close()
    }

    // MARK: - Operations

    /// Runs one operation and records what it did, waiting for the server.
    private func apply(_ operation: WriteOperation, into report: inout CommitReport) throws {
        try refuseOverlongText(operation)
        let statement = statement(for: operation)
        try record(operation, rows: session.rowsWaiting(statement.sql, statement.arguments, reused: true, doing: statement.doing), into: &report)
        if let advance = PostgreSQLKeySequence.advance(after: operation, tables: tables) { _ = try session.rowsWaiting(advance.sql, advance.arguments, reused: true, doing: advance.doing) }
    }

    /// Refuses text longer than its column's `VARCHAR(n)`, as PostgreSQL refuses it, also
    /// where PostgreSQL would not: it cuts excess spaces silently, and the row would then hold
    /// other text than the object.
    ///
    /// - Throws: ``StoreError/Code/valueNotStorable``.
    private func refuseOverlongText(_ operation: WriteOperation) throws {
        switch operation {
        case .insert(let request):
            try refuseOverlongText(request.values, table: request.table, row: request.row.map { "row \($0.key)" } ?? "a new row")
        case .update(let row, let cells):
            for cell in cells {
                guard case .set(let value) = cell.write else { continue }
                try refuseOverlong(value, table: row.table, column: cell.column, row: "row \(row.key)")
            }
        case .delete, .deleteAll:
            break
        }
    }

    private func refuseOverlongText(_ values: [SQLValue], table: Int, row: String) throws {
        for column in characterLimits[table].keys where column < values.count {
            try refuseOverlong(values[column], table: table, column: column, row: row)
        }
    }

    private func refuseOverlong(_ value: SQLValue, table: Int, column: Int, row: String) throws {
        guard case .text(let text) = value, let limit = characterLimits[table][column], text.unicodeScalars.count > limit else { return }
        let schema = tables[table]
        throw StoreError(
            code: .valueNotStorable,
            message: "\(schema.name).\(schema.columns[column].name) of \(row) is VARCHAR(\(limit)), and the text is \(text.unicodeScalars.count) characters long "
                + "(PostgreSQL refuses it, or cuts it where the rest is spaces); shorten it, or widen the column"
        )
    }

    /// The statement that carries out an operation.
    private func statement(for operation: WriteOperation) -> (sql: String, arguments: [SQLValue], doing: String) {
        switch operation {
        case .insert(let request):
            let schema = tables[request.table]
            var arguments = request.values
            if request.row == nil { arguments.remove(at: schema.primaryKeyIndex) }
            return (PostgreSQLDialect.insert(tables[request.table], assignsKey: request.row == nil), arguments, "inserting into \(schema.name)")
        case .update(let row, let cells):
            let sets = cells.compactMap { if case .set = $0.write { $0.column } else { nil } }
            let adds = cells.compactMap { if case .add = $0.write { $0.column } else { nil } }
            var arguments: [SQLValue] = cells.compactMap { if case .set(let value) = $0.write { value } else { nil } }
            arguments += cells.compactMap { if case .add(let delta) = $0.write { .integer(delta) } else { nil } }
            arguments.append(row.key)
            return (PostgreSQLDialect.update(tables[row.table], sets: sets, adds: adds), arguments, "updating \(tables[row.table].name)")
        case .delete(let row):
            let schema = tables[row.table]
            return ("DELETE FROM \(quoteIdentifier(schema.name)) WHERE \(quoteIdentifier(schema.primaryKey.name)) = $1", [row.key], "deleting from \(schema.name)")
        case .deleteAll(let table):
            return ("DELETE FROM \(quoteIdentifier(tables[table].name))", [], "deleting from \(tables[table].name)")
        }
    }

    /// Records what a batched update did, member by member, as their own statements would
    /// have: a row that is gone is its member's refusal.
    ///
    /// - Throws: ``BatchRefused`` where the database refused the statement (a value or a
    ///   constraint, which it does not say of which row); ``EngineFailure`` else.
    private func record(_ batch: PostgreSQLUpdateBatch, answer: PostgresPipeline.Answer, into report: inout CommitReport) throws {
        let rows: [[SQLValue]]
        do {
            rows = try answer.rows()
        } catch let error as StoreError {
            if error.refusesTheChange { throw BatchRefused() }
            throw EngineFailure.operation(unit: batch.members[0].unit, operation: batch.members[0].operation, error)
        }
        for (member, answer) in zip(batch.members, batch.answers(from: rows)) {
            do {
                try record(member.write, rows: answer, into: &report)
            } catch let error as StoreError {
                throw EngineFailure.operation(unit: member.unit, operation: member.operation, error)
            }
        }
    }

    /// Records what an operation's statement did (the rows it returned) in the report.
    ///
    /// - Throws: ``StoreError/Code/rowNotFound`` for an update of a row that is gone, and
    ///   ``StoreError/Code/valueNotStorable`` for a sum that is not an integer.
    private func record(_ operation: WriteOperation, rows: [[SQLValue]], into report: inout CommitReport) throws {
        switch operation {
        case .insert(let request):
            let key = request.row?.key ?? rows.first?.first ?? .null
            if request.row == nil { report.assignedKeys[request.id] = key }
            report.forgetCounters(of: RowReference(table: request.table, key: key), columns: request.values.indices)
        case .update(let row, let cells):
            let schema = tables[row.table]
            let sets = cells.compactMap { if case .set = $0.write { $0.column } else { nil } }
            let adds = cells.compactMap { if case .add = $0.write { $0.column } else { nil } }
            report.forgetCounters(of: row, columns: sets)
            guard let values = rows.first else {
                throw StoreError(
                    code: .rowNotFound,
                    message: "row \(row.key) of \(schema.name) is no longer in the database (another connection deleted it or changed its key), so this change to it cannot be stored"
                )
            }
            for (offset, column) in adds.enumerated() {
                guard case .integer = values[offset] else {
                    throw StoreError(code: .valueNotStorable, message: "adding to \(schema.name).\(schema.columns[column].name) of row \(row.key): the column holds \(values[offset].storageClass), not an integer")
                }
                report.counterValues[CellReference(row: row, column: column)] = values[offset]
            }
        case .delete(let row):
            report.forgetCounters(of: row, columns: tables[row.table].columns.indices)
        case .deleteAll(let table):
            report.counterValues = report.counterValues.filter { $0.key.row.table != table }
        }
        report.statementCount += 1
    }

    /// Inserts streamed rows as they arrive.
    private func insert(_ rows: BulkRows, into report: inout CommitReport) throws {
        let schema = tables[rows.table]
        var highestKey: SQLValue?
        // The largest key given since the sequence last moved past one: it moves before the
        // next row whose key the database assigns, and at the end.
        var unadvanced: SQLValue?
        func advance() throws {
            guard let key = unadvanced else { return }
            let advance = PostgreSQLKeySequence.advance(tables[rows.table], past: key)
            _ = try session.rowsWaiting(advance.sql, advance.arguments, reused: true, doing: advance.doing)
            unadvanced = nil
        }
        if schema.assignsPrimaryKey {
            let catchUp = PostgreSQLKeySequence.catchUp(tables[rows.table], past: nil)
            _ = try session.rowsWaiting(catchUp.sql, catchUp.arguments, reused: true, doing: catchUp.doing)
        }
        while let chunk = try rows.next() {
            for values in chunk {
                let assignsKey = schema.assignsPrimaryKey && values[schema.primaryKeyIndex] == .null
                try refuseOverlongText(values, table: rows.table, row: assignsKey ? "a new row" : "row \(values[schema.primaryKeyIndex])")
                var arguments = values
                if assignsKey {
                    arguments.remove(at: schema.primaryKeyIndex)
                    try advance()
                }
                do {
                    _ = try session.rowsWaiting(PostgreSQLDialect.insert(tables[rows.table], assignsKey: assignsKey), arguments, reused: true, doing: "inserting into \(schema.name)")
                } catch let error as StoreError {
                    var error = error
                    let row = assignsKey ? "a new row" : "row \(values[schema.primaryKeyIndex])"
                    error.message = "inserting \(row) into \(schema.name): \(error.message)"
                    throw error
                }
                if !assignsKey, schema.assignsPrimaryKey, case .integer(let key) = values[schema.primaryKeyIndex] {
                    if case .integer(let highest) = highestKey, highest >= key { continue }
                    highestKey = .integer(key)
                    unadvanced = .integer(key)
                }
            }
            report.statementCount += chunk.count
        }
        try advance()
    }
}
