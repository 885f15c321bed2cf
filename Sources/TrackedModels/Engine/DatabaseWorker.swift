import Dispatch
import Foundation
import Logging
import Synchronization

/// What the worker tells its store, in order.
enum WorkerEvent: Sendable {
    case batchFinished(BatchOutcome)
    /// Other connections committed these changes (read before the worker's next commit).
    case externalChanges(ExternalChangeBatch)
    /// Rows read back on request, by ``DatabaseWorker/reload(table:keys:announcingReset:)``.
    case rowsReloaded(table: Int, rows: [(key: SQLValue, values: [SQLValue]?)], announcingReset: Bool)
    /// A look asked for with ``DatabaseWorker/pollNow(_:)`` is done.
    case polled(UInt64)
    /// Everything asked of the worker before ``DatabaseWorker/settle(_:)`` is done.
    case settled(UInt64)
}

/// Runs everything that touches the database for a store, on one serial queue: commits batches,
/// watches for other connections' commits, and reads rows back.
///
/// It starts explicitly, once the store is ready: before ``start()`` nothing polls or reports.
/// Batches run in the order they were submitted, each in one transaction. A unit the database
/// rejects for good (a constraint, a NaN) is left out and the rest commits; units touching
/// its rows are held back with it. After any batch that did not commit whole, the worker skips
/// the batches already submitted (the store hands them back in order) until ``resume()``, so
/// that nothing commits ahead of a change it follows.
final class DatabaseWorker: @unchecked Sendable {
    // @unchecked Sendable: `engine`, `timer`, `isHalted` and `earlierKeys` are touched only by
    // blocks running on `queue`, which is serial (and by `init`, before any block exists);
    // `statistics`, `progress` and `assignedKeys` are Mutexes; everything else is
    // immutable after `init`.
    private let queue = DispatchQueue(label: "TrackedModels.DatabaseWorker")
    private var engine: (any EngineWriter)?
    private var isHalted = false
    private var timer: (any DispatchSourceTimer)?
    private let watchesChanges: Bool
    private let pollInterval: Duration
    private let maxBusyRetries: Int
    private let logger: Logger
    private let report: @Sendable (WorkerEvent) -> Void
    /// Test hook: runs on the queue right after each commit, before anything else.
    private let afterCommit: (@Sendable () -> Void)?
    /// Test hook: an error to fail a commit with, just before it commits.
    private let faultBeforeCommit: (@Sendable () -> StoreError?)?
    let statistics = Mutex(WriterStatistics())
    /// Which batches the database holds, published as they commit (see ``CommitProgress``).
    private let progress = Mutex(CommitProgress())
    /// Keys the database assigned to inserts, published before their commit, so that a fetch
    /// that sees the row can find the object that inserted it.
    private let assignedKeys = Mutex<[RowReference: UInt64]>([:])
    /// Keys committed batches assigned, by insert request, with the batch's sequence: later
    /// batches the store made before it learned them may hold their placeholders.
    private var earlierKeys: [UInt64: (key: SQLValue, sequence: UInt64)] = [:]
    /// Each table's to-one columns, where placeholders of assigned keys may stand.
    private let linkColumns: [[Int]]

    /// Takes over an engine; nothing runs until ``start()``.
    ///
    /// - Parameters:
    ///   - watchesChanges: Whether to look for other connections' commits.
    ///   - pollInterval: How often to look.
    ///   - report: Called on the worker's queue with what happened, in order.
    init(
        engine: any EngineWriter,
        linkColumns: [[Int]],
        watchesChanges: Bool,
        pollInterval: Duration,
        maxBusyRetries: Int,
        logger: Logger,
        afterCommit: (@Sendable () -> Void)? = nil,
        faultBeforeCommit: (@Sendable () -> StoreError?)? = nil,
        report: @escaping @Sendable (WorkerEvent) -> Void
    ) {
        self.engine = engine
        self.linkColumns = linkColumns
        self.watchesChanges = watchesChanges
        self.pollInterval = pollInterval
        self.maxBusyRetries = maxBusyRetries
        self.logger = logger
        self.afterCommit = afterCommit
        self.faultBeforeCommit = faultBeforeCommit
        self.report = report
    }

    /// Starts watching for other connections' commits. Call once, when the store is ready.
    func start() {
        queue.async { [self] in
            guard watchesChanges, engine != nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let interval = max(pollInterval, .milliseconds(1)).dispatchInterval
            timer.schedule(deadline: .now() + interval, repeating: interval)
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.resume()
            self.timer = timer
            engine?.watchForCommits(on: queue) { [weak self] in self?.wake() }
        }
    }

    func submit(_ batch: WriteBatch) {
        queue.async { [self] in
            let result = run(batch)
            report(.batchFinished(BatchOutcome(sequence: batch.sequence, result: result)))
            // A store that commits and seldom polls keeps its place in the log too.
            engine?.tidyChangeLog()
        }
    }

    /// Takes batches again after one that did not commit whole.
    func resume() {
        queue.async { [self] in isHalted = false }
    }

    /// Looks for other connections' commits now, then reports `.polled(id)`.
    func pollNow(_ id: UInt64) {
        queue.async { [self] in
            poll()
            report(.polled(id))
        }
    }

    /// Reports `.settled(id)` once everything asked before it is done (such as the reloads a
    /// poll's resets asked for).
    func settle(_ id: UInt64) {
        queue.async { [self] in report(.settled(id)) }
    }

    /// Reads rows back and reports them as `.rowsReloaded`; a failed read reports nothing, so
    /// the objects keep their values.
    ///
    /// - Parameter announcingReset: Whether the store tells the table's subscribers to re-read
    ///   (after falling behind other connections' changes).
    func reload(table: Int, keys: [SQLValue], announcingReset: Bool) {
        queue.async { [self] in
            guard let rows = try? engine?.readRows(table: table, keys: keys) else { return }
            report(.rowsReloaded(table: table, rows: zip(keys, rows).map { (key: $0, values: $1) }, announcingReset: announcingReset))
        }
    }

    /// Closes the engine once every submitted batch has run, without waiting for it.
    func close() {
        queue.async { [self] in closeEngine() }
    }

    /// Closes the engine once every submitted batch has run; returns when it is closed,
    /// without blocking the caller.
    func closed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                closeEngine()
                continuation.resume()
            }
        }
    }

    private func closeEngine() {
        timer?.cancel()
        timer = nil
        engine?.close()
        engine = nil
    }

    /// Which of the store's batches the database holds now. Safe from any thread.
    var commitProgress: CommitProgress {
        progress.withLock { $0 }
    }

    /// The insert request the database gave this row's key to, while the store has not applied
    /// that key yet. Safe from any thread: the key is published before its commit.
    func insertRequest(assignedKey row: RowReference) -> UInt64? {
        assignedKeys.withLock { $0[row] }
    }

    /// The keys of a table that committed inserts were given and the store has yet to apply:
    /// the database shows those rows while the store still knows them by their placeholders.
    func keysAssignedAhead(table: Int) -> Set<SQLValue> {
        assignedKeys.withLock { published in Set(published.keys.lazy.filter { $0.table == table }.map(\.key)) }
    }

    /// Forgets published keys the store has applied.
    func forgetAssignedKeys(of requests: some Sequence<UInt64>) {
        let requests = Set(requests)
        assignedKeys.withLock { published in
            published = published.filter { !requests.contains($0.value) }
        }
    }

    /// Runs `body` with the engine on the worker's queue, for tests.
    func withEngine<Result>(_ body: (any EngineWriter) throws -> Result) throws -> Result? {
        try queue.sync { try engine.map(body) }
    }

    // MARK: - On the queue

    /// The engine's signal that someone may have committed: look now, and again shortly if the
    /// look failed, or found nothing where a signal may come before its commit can be read
    /// (SQLite writes the WAL frames before it publishes the commit, and a writer on a loaded
    /// machine may be descheduled between the two for a long while). Where every signal follows
    /// a commit the look can read (``EngineWriter/signalsReadableCommits``), a look that finds
    /// nothing means an earlier look read it.
    private func wake() {
        switch poll(answeringSignal: true) {
        case .found: return
        case .nothingNew where engine?.signalsReadableCommits == true: return
        case .nothingNew, .failed: break
        }
        for delay in [1, 10, 100, 1_000] {
            queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in self?.poll() }
        }
    }

    /// What a look for other connections' commits found.
    private enum Look {
        case found
        case nothingNew
        /// The read failed: it is made again at the next look.
        case failed
    }

    /// Reports other connections' commits, if any.
    ///
    /// - Parameter answeringSignal: Whether the look answers the engine's signal (see
    ///   ``EngineWriter/readChangeLog(answeringSignal:)``); the timer's looks, the program's and
    ///   the retries after a failed look do not.
    @discardableResult
    private func poll(answeringSignal: Bool = false) -> Look {
        guard let engine, watchesChanges else { return .nothingNew }
        let batch: ExternalChangeBatch?
        do {
            batch = try engine.readChangeLog(answeringSignal: answeringSignal)
        } catch {
            return .failed
        }
        defer { engine.tidyChangeLog() }
        guard let batch else { return .nothingNew }
        if !batch.isEmpty { report(.externalChanges(batch)) }
        return .found
    }

    private func run(_ batch: WriteBatch) -> BatchOutcome.Result {
        // Whatever happens, a sender of streamed rows must not wait for a taker that is gone.
        defer { batch.rows?.close() }
        guard !isHalted else { return .skipped }
        guard let engine else {
            isHalted = true
            return .failed(StoreError.closed(operation: "commit"))
        }
        // The store has put the keys of the batches it has seen finish in place of their
        // placeholders in every unit it hands over since.
        earlierKeys = earlierKeys.filter { $0.value.sequence > batch.settledThrough }
        let keys = earlierKeys.mapValues(\.key)
        var rejected: [UInt64: (error: StoreError, operation: Int)] = [:]
        var held: Set<UInt64> = []
        var attempt = 0
        let insertTables = Dictionary(
            batch.units.flatMap(\.operations).compactMap { operation -> (UInt64, Int)? in
                if case .insert(let request) = operation, request.row == nil { (request.id, request.table) } else { nil }
            },
            uniquingKeysWith: { first, _ in first }
        )
        while true {
            let units = batch.units.filter { rejected[$0.id] == nil && !held.contains($0.id) }
            if units.isEmpty, batch.rows == nil {
                // Everything was refused or held: there is nothing to commit.
                isHalted = true
                statistics.withLock { $0.rejectedChanges += rejected.count }
                var report = CommitReport()
                report.rejected = rejected
                report.held = held
                return .committed(report)
            }
            do {
                let commit: EngineCommit
                do {
                    commit = try engine.commit(units, rows: batch.rows, earlierKeys: keys) { report in
                        progress.withLock { $0.committing = batch.sequence }
                        if let fault = faultBeforeCommit?() { throw fault }
                        publishAssignedKeys(report.assignedKeys, tables: insertTables)
                    }
                } catch {
                    progress.withLock { $0.committing = nil }
                    throw error
                }
                progress.withLock { $0 = CommitProgress(committedThrough: batch.sequence, leftOut: Set(rejected.keys).union(held)) }
                afterCommit?()
                for (request, key) in commit.report.assignedKeys { earlierKeys[request] = (key, batch.sequence) }
                if !commit.external.isEmpty { report(.externalChanges(commit.external)) }
                var result = commit.report
                result.rejected = rejected
                result.held = held
                statistics.withLock {
                    $0.commits += 1
                    $0.rowStatements += result.statementCount
                    $0.rejectedChanges += rejected.count
                }
                if !result.isWhole { isHalted = true }
                return .committed(result)
            } catch let failure as EngineFailure {
                withdrawAssignedKeys(tables: insertTables)
                switch failure {
                // A batch with streamed rows commits whole or not at all.
                case .operation(let unitIndex, let operation, let error) where error.refusesTheChange && batch.rows == nil:
                    let unit = units[unitIndex]
                    rejected[unit.id] = (error, operation)
                    hold(after: unit, in: batch, rejected: rejected, held: &held)
                    continue
                case .operation(let unitIndex, let operation, let error) where error.refusesTheChange:
                    isHalted = true
                    return .refused(unit: units[unitIndex].id, operation: operation, error)
                default:
                    let error = failure.error
                    // Streamed rows already taken cannot be taken again.
                    if error.mayPass, attempt < maxBusyRetries, batch.rows?.hasStarted != true {
                        attempt += 1
                        statistics.withLock { $0.busyRetries += 1 }
                        logger.debug("the database is busy; retrying the commit", metadata: ["attempt": "\(attempt)", "error": "\(error.message)"])
                        Thread.sleep(forTimeInterval: 0.025 * Double(1 << min(attempt, 6)))
                        continue
                    }
                    statistics.withLock { $0.failures += 1 }
                    isHalted = true
                    return .failed(error)
                }
            } catch is CancellationError {
                isHalted = true
                return .cancelled
            } catch {
                statistics.withLock { $0.failures += 1 }
                isHalted = true
                return .failed(error as? StoreError ?? StoreError(code: .engineFailure, message: "\(error)"))
            }
        }
    }

    /// Holds back every later unit of the batch that touches the rows of a rejected or held
    /// unit, so that changes to a row never commit ahead of one they follow, and every unit
    /// (earlier or later) that links to a row one of them inserts without a key.
    private func hold(after rejectedUnit: WriteUnit, in batch: WriteBatch, rejected: [UInt64: (error: StoreError, operation: Int)], held: inout Set<UInt64>) {
        guard batch.units.contains(where: { $0.id == rejectedUnit.id }) else { return }
        var changed = true
        while changed {
            changed = false
            var staying: [WriteUnit] = []
            for unit in batch.units {
                if rejected[unit.id] != nil || held.contains(unit.id) {
                    staying.append(unit)
                } else if staying.contains(where: { $0.overlaps(unit) }) || batch.units.contains(where: {
                    (rejected[$0.id] != nil || held.contains($0.id)) && unit.references(insertsOf: $0, linkColumns: linkColumns)
                }) {
                    held.insert(unit.id)
                    staying.append(unit)
                    changed = true
                }
            }
        }
    }

    private func publishAssignedKeys(_ keys: [UInt64: SQLValue], tables: [UInt64: Int]) {
        guard !keys.isEmpty else { return }
        assignedKeys.withLock { published in
            for (request, key) in keys {
                if let table = tables[request] { published[RowReference(table: table, key: key)] = request }
            }
        }
    }

    private func withdrawAssignedKeys(tables: [UInt64: Int]) {
        guard !tables.isEmpty else { return }
        assignedKeys.withLock { published in
            published = published.filter { tables[$0.value] == nil }
        }
    }
}
