import Logging

/// Everything about writes the store has not seen committed: pending units, batches in flight,
/// who waits for them, when to flush, and what the database rejected.
///
/// It is the one place that knows what is written and not yet committed, so it also owns the
/// overlay rule (committed + in flight + pending) that decides what an object shows when a
/// committed value meets local changes: a counter's committed total after a flush, or another
/// process's change.
///
/// It belongs to the store's isolation domain. It hands batches to the ``DatabaseWorker`` and
/// learns their outcome through ``finish(_:)``; it never calls back into the registrar or store.
final class WriteBehind {
    /// When to flush on its own, and what to tell the worker.
    struct Policy {
        var interval: Duration
        var threshold: Int
    }

    /// A batch handed to the worker, with the units it came from (they hold the objects).
    struct InFlight {
        var sequence: UInt64
        var units: [PendingChanges.Unit]
        /// The table a bulk insert streams rows into with this batch.
        var bulkTable: Int?
    }

    /// What a finished batch means for the objects.
    struct Finished {
        /// Committed counter values, already overlaid with the increments still to commit.
        var counters: [(cell: CellReference, value: SQLValue)] = []
        /// Keys the database assigned, by insert request.
        var assignedKeys: [UInt64: SQLValue] = [:]
        /// The table a bulk insert committed rows into, which its subscribers re-read.
        var bulkInsertedTable: Int?
        /// To-one columns written with the placeholder of a key this batch assigned, with that
        /// key: the committed rows that hold it now, and the writes still to commit that will
        /// (the objects that point at the new row learn its key).
        var links: [ResolvedLink] = []
    }

    // Unchecked exclusivity: only this class's methods access it, and none of them calls out
    // (to handlers, the registrar or the store) while an access is open.
    @exclusivity(unchecked) private(set) var pending = PendingChanges() { didSet { queuedRowIndex = .unused } }
    private(set) var inFlight: [InFlight] = [] { didSet { queuedRowIndex = .unused } }
    /// Where each row's queued operations lie, for a burst of reads (WriteBehind+QueuedRows.swift).
    var queuedRowIndex = QueuedRowIndex.Slot.unused
    private var waiters: [(sequence: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    /// Bulk inserts waiting for their batch's outcome, by sequence; and outcomes that came
    /// before their bulk insert waited (while it was still sending rows).
    private var bulkWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    private var bulkOutcomes: [UInt64: Result<Void, any Error>] = [:]
    private var lastSubmitted: UInt64 = 0
    private var lastFinished: UInt64 = 0
    private var lastInsertRequest: UInt64 = 0
    private var isIntervalArmed = false
    /// While positive, the policy hands nothing to the worker (see ``withoutSubmitting(_:)``).
    private var submissionHolds = 0
    /// Cells with writes in flight (the sum of their increments, and how many plain sets),
    /// built from `inFlight` only when a committed value needs it (WriteBehind+Overlay.swift),
    /// dropped when it changes.
    var cellsInFlightCache: [CellReference: (delta: Int64, sets: Int)]?
    /// Where refused changes are published.
    let errors: WriteErrorStreams
    let schemas: [TableSchema]
    /// Each table's to-one columns, where placeholders of assigned keys may stand.
    let linkColumns: [[Int]]
    private let policy: Policy
    private let logger: Logger
    let worker: DatabaseWorker
    /// Asks for ``intervalElapsed()`` to be called on the store's actor after a delay.
    private let scheduleTick: @Sendable (Duration) -> Void

    init(schemas: [TableSchema], policy: Policy, worker: DatabaseWorker, logger: Logger, scheduleTick: @escaping @Sendable (Duration) -> Void) {
        self.schemas = schemas
        linkColumns = schemas.map(\.relationshipColumns)
        self.logger = logger
        self.policy = policy
        self.worker = worker
        self.scheduleTick = scheduleTick
        errors = WriteErrorStreams(logger: logger)
    }

    /// Whether changes are waiting to be committed (pending or in flight).
    var hasChanges: Bool { !pending.isEmpty || !inFlight.isEmpty }

    // MARK: - Recording

    /// Records a user's write to a cell: the hot path of every tracked assignment.
    ///
    /// - Parameter hint: Where the row's last write went (kept by the row's object).
    func record(_ write: CellWrite, to cell: CellReference, of object: AnyObject, hint: inout PendingChanges.UnitHint) {
        pending.write(write, to: cell, of: object, hint: &hint)
        if !isIntervalArmed || pending.operationCount >= policy.threshold { applyPolicy() }
    }

    /// A new insert request id, for an insert about to be recorded whose key others must point
    /// at before it is (objects that point at each other).
    func reserveInsertRequest() -> UInt64 {
        lastInsertRequest += 1
        return lastInsertRequest
    }

    /// Records an insert; returns its request id (`reserved`, if given).
    func recordInsert(table: Int, values: [SQLValue], key: SQLValue?, of object: AnyObject, reserved: UInt64? = nil) -> UInt64 {
        let id = reserved ?? reserveInsertRequest()
        let request = InsertRequest(table: table, values: values, row: key.map { RowReference(table: table, key: $0) }, id: id)
        pending.insert(request, of: object)
        applyPolicy()
        return request.id
    }

    /// Records a write to an object whose key the database has not assigned yet; `false` once its
    /// insert is in flight (record it again once the key is known).
    func record(_ write: CellWrite, column: Int, ofInsert request: UInt64, table: Int) -> Bool {
        pending.write(write, column: column, ofInsert: request, table: table)
    }

    func recordDelete(_ row: RowReference, of object: AnyObject) {
        pending.delete(row, of: object)
        applyPolicy()
    }

    func recordDeleteAll(table: Int) {
        pending.deleteAll(table: table)
        applyPolicy()
    }

    // MARK: - Transactions

    func beginTransaction() { pending.beginTransaction() }
    func transactionSnapshot() -> PendingChanges.Unit? { pending.transactionSnapshot() }
    func restoreTransaction(to snapshot: PendingChanges.Unit) { pending.restoreTransaction(to: snapshot) }

    func endTransaction(keeping: Bool) {
        pending.endTransaction(keeping: keeping)
        applyPolicy()
    }

    // MARK: - Policy

    /// Records what `body` records before any of it is handed to the worker: an insert and the
    /// objects inserted with it (a target's row may hold the placeholder of the key the insert
    /// is to get, and so must commit with it).
    func withoutSubmitting<Result>(_ body: () throws -> Result) rethrows -> Result {
        submissionHolds += 1
        defer {
            submissionHolds -= 1
            if submissionHolds == 0 { applyPolicy() }
        }
        return try body()
    }

    /// Flushes at the threshold, else arms the interval; nothing while a transaction is open.
    private func applyPolicy() {
        guard !pending.isInTransaction, submissionHolds == 0, !pending.isEmpty else { return }
        if pending.operationCount >= policy.threshold {
            submit(retryingRejected: false)
        } else if !isIntervalArmed {
            isIntervalArmed = true
            scheduleTick(policy.interval)
        }
    }

    func intervalElapsed() {
        isIntervalArmed = false
        guard !pending.isInTransaction else { return }
        submit(retryingRejected: false)
    }

    // MARK: - Flushing

    /// Commits every change made before the call and returns once it is committed.
    ///
    /// Units the database rejected are tried once more; while any stays rejected, this throws
    /// its error, so that nothing is skipped silently.
    func flush() async throws {
        precondition(!pending.isInTransaction, "flush() cannot run inside store.transaction { }")
        submit(retryingRejected: true)
        while lastSubmitted > lastFinished {
            let target = lastSubmitted
            try await withCheckedThrowingContinuation { continuation in
                waiters.append((target, continuation))
            }
            // Units a partial commit handed back (held behind a rejected one, or skipped after
            // it) may commit now.
            submit(retryingRejected: false)
        }
        if let stuck = pending.all.first(where: { $0.rejection != nil }) {
            throw rejectionError(stuck, among: pending.all.count { $0.rejection != nil })
        }
    }

    /// Hands every ready unit to the worker as one batch.
    func submit(retryingRejected: Bool) {
        let units = pending.takeReady(retryingRejected: retryingRejected, linkColumns: linkColumns)
        guard !units.isEmpty else { return }
        lastSubmitted += 1
        inFlight.append(InFlight(sequence: lastSubmitted, units: units))
        cellsInFlightCache = nil
        worker.submit(WriteBatch(sequence: lastSubmitted, units: units.map(\.unit), settledThrough: lastFinished))
    }

    /// Commits every pending change (refused ones tried again) and then `rows`, as the store
    /// sends them, in one transaction: whole, or nothing. Returns once it committed.
    ///
    /// - Parameter send: Sends the rows, then finishes or cancels them.
    /// - Throws: Why nothing committed (every pending change stays pending, in order):
    ///   `CancellationError` when `send` cancelled the rows, the error `send` refused them with.
    ///   A change the database refused for good, or one held behind it, would be left out of
    ///   the transaction: then nothing is submitted, and this throws what `flush()` throws.
    func commit(streaming rows: BulkRows, send: () async -> Void) async throws {
        precondition(!pending.isInTransaction, "a bulk insert cannot run inside store.transaction { }")
        let units = pending.takeReady(retryingRejected: true, linkColumns: linkColumns)
        if let stuck = pending.all.first(where: { $0.rejection != nil }) {
            pending.restore(units)
            rows.close()
            throw rejectionError(stuck, among: pending.all.count { $0.rejection != nil })
        }
        lastSubmitted += 1
        let sequence = lastSubmitted
        inFlight.append(InFlight(sequence: sequence, units: units, bulkTable: rows.table))
        cellsInFlightCache = nil
        worker.submit(WriteBatch(sequence: sequence, units: units.map(\.unit), settledThrough: lastFinished, rows: rows))
        await send()
        if let outcome = bulkOutcomes.removeValue(forKey: sequence) { return try outcome.get() }
        try await withCheckedThrowingContinuation { continuation in
            bulkWaiters[sequence] = continuation
        }
    }

    /// Hands a bulk insert its batch's outcome, now or when it waits for it.
    private func settleBulk(_ sequence: UInt64, _ outcome: Result<Void, any Error>) {
        if let waiter = bulkWaiters.removeValue(forKey: sequence) {
            waiter.resume(with: outcome)
        } else {
            bulkOutcomes[sequence] = outcome
        }
    }

    /// Fails the bulk inserts of batches handed back uncommitted.
    private func failBulkInserts(in batches: some Sequence<InFlight>, with error: any Error) {
        for batch in batches where batch.bulkTable != nil { settleBulk(batch.sequence, .failure(error)) }
    }

    /// Takes a batch's outcome, in the order batches were submitted.
    func finish(_ outcome: BatchOutcome) -> Finished {
        guard let batch = inFlight.first, batch.sequence == outcome.sequence else {
            return Finished()  // skipped after a failure: its units are pending again already
        }
        switch outcome.result {
        case .committed(let report) where report.isWhole:
            inFlight.removeFirst()
            cellsInFlightCache = nil
            lastFinished = batch.sequence
            resumeWaiters { $0 <= batch.sequence ? .success(()) : nil }
            if batch.bulkTable != nil { settleBulk(batch.sequence, .success(())) }
            var result = finished(report, committed: batch.units)
            result.bulkInsertedTable = batch.bulkTable
            return result
        case .committed(let report):
            // Some units were rejected: they and the units held behind them stay pending, in
            // order, in front of the batches the worker now skips.
            var returned = batch.units.filter { report.rejected[$0.id] != nil || report.held.contains($0.id) }
            for index in returned.indices {
                if let rejection = report.rejected[returned[index].id] {
                    markRefused(&returned[index], error: rejection.error, operation: rejection.operation)
                }
            }
            failBulkInserts(in: inFlight.dropFirst(), with: StoreError(
                code: .changeRejected,
                message: "the database refused a change made before the bulk insert, so the bulk insert was not attempted; nothing of it was committed. See store.pendingChanges, then insert again"
            ))
            handBack(returned + inFlight.dropFirst().flatMap(\.units))
            resumeWaiters { _ in .success(()) }
            return finished(report, committed: batch.units.filter { report.rejected[$0.id] == nil && !report.held.contains($0.id) })
        case .failed(let error) where batch.bulkTable != nil:
            // The bulk insert's own failure (a refused row, a full disk): it is told; flushes
            // waiting on the changes handed back submit them again.
            logger.warning("a bulk insert failed; the changes pending before it stay pending", metadata: [
                "error": "\(error.message)", "code": "\(error.code)",
            ])
            endBulkBatch(batch, with: error)
        case .failed(let error):
            logger.warning("a commit failed; every change stays pending, in order", metadata: [
                "error": "\(error.message)", "code": "\(error.code)", "changes": "\(inFlight.reduce(0) { $0 + $1.units.count })",
            ])
            failBulkInserts(in: inFlight, with: error)
            handBack(inFlight.flatMap(\.units))
            resumeWaiters { _ in .failure(error) }
            errors.publish(error)
            if error.mayPass { applyPolicy() }
            return Finished()
        case .refused(let unit, let operation, let error):
            // A change made before the bulk insert, refused in its transaction: marked as a
            // plain flush marks it, and the bulk insert fails with it.
            guard let index = inFlight[0].units.firstIndex(where: { $0.id == unit }) else {
                preconditionFailure("the worker refused unit \(unit), which batch \(batch.sequence) does not hold")
            }
            markRefused(&inFlight[0].units[index], error: error, operation: operation)
            endBulkBatch(batch, with: rejectionError(inFlight[0].units[index], among: 1))
        case .cancelled:
            endBulkBatch(batch, with: CancellationError())
        case .skipped:
            return Finished()
        }
        return Finished()
    }

    /// Marks a unit the database refused: it stays pending until replaced or discarded. (One
    /// that found its row gone keeps the row's later changes behind it until the store hears
    /// the row went; then they are set aside or dropped.)
    private func markRefused(_ unit: inout PendingChanges.Unit, error: StoreError, operation index: Int) {
        unit.rejection = PendingChanges.Rejection(error: error, operation: index)
        unit.isRetryDue = false
        errors.publish(error)
        let operation = unit.unit.operations[index]
        logger.warning("the database refused a change; it stays pending until replaced or discarded", metadata: [
            "table": "\(schemas[operation.table].name)",
            "row": "\(operation.row.map { "\($0.key)" } ?? "new")",
            "change": "\(operation.description(tables: schemas, showingTypes: true))",
            "error": "\(error.message)",
        ])
    }

    /// A bulk batch that did not commit: it is told why; the batches behind it were skipped
    /// and are handed back with it, and their bulk inserts (if any) fail too.
    private func endBulkBatch(_ batch: InFlight, with error: any Error) {
        settleBulk(batch.sequence, .failure(error))
        failBulkInserts(in: inFlight.dropFirst(), with: StoreError(
            code: .engineFailure,
            message: "a bulk insert submitted before this one did not commit, so this one was not attempted; nothing of it was committed. Insert again"
        ))
        // The changes handed back wait for the next flush (or write): not a timer of their own,
        // so that a caller who gives up (discardPendingChanges) is in time.
        handBack(inFlight.flatMap(\.units))
        resumeWaiters { _ in .success(()) }
    }

    /// Puts units back in front of the pending ones and lets the worker take batches again.
    private func handBack(_ units: [PendingChanges.Unit]) {
        inFlight.removeAll()
        cellsInFlightCache = nil
        lastFinished = lastSubmitted
        pending.restore(units)
        worker.resume()
    }

    /// What a committed batch means for the objects: its committed units' links to the rows it
    /// gave keys, and every placeholder of those keys still to commit replaced by the key.
    private func finished(_ report: CommitReport, committed: [PendingChanges.Unit]) -> Finished {
        var result = Finished(assignedKeys: report.assignedKeys)
        if !report.assignedKeys.isEmpty {
            result.links = committedLinks(in: committed, keys: report.assignedKeys)
            var queued: [(link: DeferredLink, key: SQLValue)] = []
            var rekeyed = false
            for index in inFlight.indices {
                for unitIndex in inFlight[index].units.indices {
                    queued += inFlight[index].units[unitIndex].resolvePlaceholders(report.assignedKeys, linkColumns: linkColumns, rekeyed: &rekeyed)
                }
            }
            if rekeyed { cellsInFlightCache = nil }
            queued += pending.resolvePlaceholders(report.assignedKeys, linkColumns: linkColumns)
            result.links += queued.map { ResolvedLink(link: $0.link, key: $0.key, isCommitted: false) }
        }
        for (cell, committed) in report.counterValues {
            if let value = overlay(committed, for: cell) { result.counters.append((cell, value)) }
        }
        return result
    }

    /// The links committed units wrote with a placeholder of these keys and that the rows
    /// hold at the end of the commit (not written again, nor deleted, after).
    private func committedLinks(in units: [PendingChanges.Unit], keys: [UInt64: SQLValue]) -> [ResolvedLink] {
        var final: [DeferredLink.Cell: ResolvedLink] = [:]
        for unit in units {
            for var operation in unit.unit.operations {
                var rekeyed = false
                let resolved = operation.resolvePlaceholders(keys, linkColumns: linkColumns, rekeyed: &rekeyed)
                switch operation {
                case .insert(let request):
                    let row = request.row.map { DeferredLink.RowKey.key($0.key) } ?? .insert(request.id)
                    for column in linkColumns[request.table] { final[DeferredLink.Cell(table: request.table, row: row, column: column)] = nil }
                case .update(let row, let cells):
                    for cell in cells { final[DeferredLink.Cell(table: row.table, row: .key(row.key), column: cell.column)] = nil }
                case .delete(let row):
                    final = final.filter { $0.key.table != row.table || $0.key.row != .key(row.key) }
                case .deleteAll(let table):
                    final = final.filter { $0.key.table != table }
                }
                for (link, key) in resolved { final[link.cell] = ResolvedLink(link: link, key: key, isCommitted: true) }
            }
        }
        return Array(final.values)
    }

    private func resumeWaiters(_ result: (UInt64) -> Result<Void, StoreError>?) {
        var waiting: [(sequence: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        for waiter in waiters {
            switch result(waiter.sequence) {
            case .success?: waiter.continuation.resume()
            case .failure(let error)?: waiter.continuation.resume(throwing: error)
            case nil: waiting.append(waiter)
            }
        }
        waiters = waiting
    }

    // MARK: - Rows with changes (see WriteBehind+QueuedRows.swift for reading them)

    /// Drops the pending updates and deletes of a row another connection deleted or re-keyed,
    /// or whose insert was discarded (see ``PendingChanges/dropChanges(of:)``); updates in
    /// flight meet the missing row and are rejected.
    func dropChanges(of row: RowReference) {
        // After the program's own insert of the row, in flight, everything pending is for it.
        guard !inFlight.contains(where: { $0.units.contains { $0.unit.operations.contains { $0.inserts(row) } } }) else { return }
        pending.dropChanges(of: row)
    }

    // MARK: - Discarding

    /// Removes a pending unit that is not in flight, returning it so its objects can be put back.
    func discard(_ id: UInt64) -> DiscardedChanges? {
        guard let unit = pending.all.first(where: { $0.id == id }) else { return nil }
        let shown = rowsShown(byInsertsOf: [unit])
        return pending.remove(unit: id).map { DiscardedChanges([$0], shownBefore: shown, insertedAgain: isInsertUncommitted) }
    }

    /// Removes every pending unit that is not in flight.
    func discardAll() -> DiscardedChanges {
        let shown = rowsShown(byInsertsOf: pending.all)
        // An object a commit in flight inserts stays attached (the program related to it again
        // after its delete was taken back, say): that insert still shows it.
        let discarded = pending.removeAll()
        return DiscardedChanges(discarded, shownBefore: shown, insertedAgain: isInsertUncommitted)
    }

    /// The keyed rows these units insert that show (their insert is the last thing that
    /// decides whether they exist), with the values they show, found before the units are
    /// removed: subscribers saw them, so they must hear them go, or turn into what shows after.
    private func rowsShown(byInsertsOf units: [PendingChanges.Unit]) -> [RowReference: [SQLValue]] {
        var rows: [RowReference: [SQLValue]] = [:]
        for unit in units {
            for case .insert(let request) in unit.unit.operations {
                if let row = request.row, rows[row] == nil, decidesExistence(of: row) == true { rows[row] = uncommittedValues(of: row, over: nil) }
            }
        }
        return rows
    }
}
