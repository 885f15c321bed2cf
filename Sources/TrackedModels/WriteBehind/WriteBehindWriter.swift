import Dispatch
import Foundation
import Synchronization

/// What the writer tells its store, in order.
enum WriterEvent: Sendable {
    case batchFinished(BatchOutcome)
    /// Other connections committed these changes (read before the writer's next commit).
    case externalChanges(ExternalChangeBatch)
    /// A poll asked for with ``WriteBehindWriter/pollNow(_:)`` is done.
    case pollFinished(UInt64)
}

/// Commits write batches on its own connection and its own serial queue, and watches the
/// change log for other connections' commits.
///
/// Each batch is one `BEGIN IMMEDIATE` transaction, run in the order batches were submitted.
/// After a batch fails, the writer skips every batch already submitted (the store puts them
/// back in order) until ``resume()``, so that nothing commits ahead of a failed change.
final class WriteBehindWriter: @unchecked Sendable {
    // @unchecked Sendable: `connection`, `statements`, `changeLog`, `timer`, `fileSignal` and
    // `isHalted` are touched only by blocks running on `queue`, which is serial (and by `init`,
    // before any block runs); `statistics` is a Mutex; the rest is immutable.
    private let queue = DispatchQueue(label: "TrackedModels.WriteBehindWriter")
    private var connection: Connection?
    private var statements: [StatementShape: Statement] = [:]
    private var isHalted = false
    private let changeLog: ChangeLogReader?
    private var timer: (any DispatchSourceTimer)?
    private var fileSignal: FileChangeSignal?
    private let tables: [TableSchema]
    private let maxBusyRetries: Int
    private let report: @Sendable (WriterEvent) -> Void
    let statistics = Mutex(WriterStatistics())

    /// Takes over the writer's connection.
    ///
    /// - Parameters:
    ///   - changeLog: Reads other connections' changes; `nil` when the store does not watch.
    ///   - pollInterval: How often to check for other connections' commits.
    ///   - walFile: The database's WAL file, watched to notice commits before the next poll;
    ///     `nil` for a database without one.
    ///   - report: Called on the writer's queue with what happened, in order.
    init(
        connection: Connection,
        tables: [TableSchema],
        maxBusyRetries: Int,
        changeLog: ChangeLogReader?,
        pollInterval: Duration,
        walFile: String?,
        report: @escaping @Sendable (WriterEvent) -> Void
    ) {
        self.connection = connection
        self.tables = tables
        self.maxBusyRetries = maxBusyRetries
        self.changeLog = changeLog
        self.report = report
        if changeLog != nil {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let interval = max(pollInterval, .milliseconds(1)).dispatchInterval
            timer.schedule(deadline: .now() + interval, repeating: interval)
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.resume()
            self.timer = timer
            if let walFile {
                fileSignal = FileChangeSignal(path: walFile, queue: queue) { [weak self] in self?.wake() }
            }
        }
    }

    func submit(_ batch: WriteBatch) {
        queue.async { [self] in
            let result = run(batch)
            report(.batchFinished(BatchOutcome(sequence: batch.sequence, result: result)))
        }
    }

    /// Looks for other connections' commits now, then reports `.pollFinished(id)`.
    func pollNow(_ id: UInt64) {
        queue.async { [self] in
            poll()
            report(.pollFinished(id))
        }
    }

    /// Accepts batches again after a failure.
    func resume() {
        queue.async { [self] in isHalted = false }
    }

    /// Closes the connection once every submitted batch has run, then calls `completion`.
    func close(completion: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            timer?.cancel()
            timer = nil
            fileSignal?.cancel()
            fileSignal = nil
            statements.removeAll()
            connection = nil
            completion()
        }
    }

    /// The writer connection's `PRAGMA synchronous` (1 = NORMAL, 2 = FULL).
    func synchronousSetting() throws -> SQLValue {
        try queue.sync { try connection?.scalar("PRAGMA synchronous") ?? .null }
    }

    // MARK: - On the queue

    /// A write to the WAL file: poll now, and again shortly if the commit was not visible yet
    /// (SQLite writes the WAL frames before it publishes the commit in the shared index).
    private func wake() {
        guard !poll() else { return }
        for delay in [1, 10] {
            queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in self?.poll() }
        }
    }

    /// Reads other connections' changes if they committed since the last look.
    ///
    /// - Returns: Whether they had.
    @discardableResult
    private func poll() -> Bool {
        guard let connection, let changeLog, (try? changeLog.othersCommitted(on: connection)) == true else { return false }
        // A failed read is retried on the next tick: the position only moves on success.
        let position = changeLog.position
        do {
            let batch = try connection.withTransaction(.deferred) { try changeLog.collect(on: connection) }
            if !batch.isEmpty { report(.externalChanges(batch)) }
        } catch {
            changeLog.rewind(to: position)
        }
        return true
    }

    private func run(_ batch: WriteBatch) -> BatchOutcome.Result {
        guard !isHalted else { return .skipped }
        guard let connection else {
            isHalted = true
            return .failed(SQLiteError(code: .misuse, message: "the store's writer is closed; open a new ModelStore"))
        }
        var attempt = 0
        while true {
            // Others' changes are read first, inside the write lock, so that everything the
            // log holds after them is this writer's own.
            var external = ExternalChangeBatch()
            var positionAfterOthers = changeLog?.position ?? 0
            defer { if !external.isEmpty { report(.externalChanges(external)) } }
            do {
                let commit = try connection.withTransaction(.immediate) {
                    if let changeLog {
                        external = try changeLog.collect(on: connection)
                        positionAfterOthers = changeLog.position
                    }
                    let commit = try apply(batch, on: connection)
                    try changeLog?.skipOwnEntries(on: connection)
                    return commit
                }
                statistics.withLock { $0.commits += 1 }
                _ = try? changeLog?.othersCommitted(on: connection)
                return .committed(commit)
            } catch let error as SQLiteError {
                changeLog?.rewind(to: positionAfterOthers)
                if error.code.isTransient, attempt < maxBusyRetries {
                    attempt += 1
                    statistics.withLock { $0.busyRetries += 1 }
                    Thread.sleep(forTimeInterval: 0.025 * Double(1 << min(attempt, 6)))
                    continue
                }
                statistics.withLock { $0.failures += 1 }
                isHalted = true
                return .failed(error)
            } catch {
                changeLog?.rewind(to: positionAfterOthers)
                statistics.withLock { $0.failures += 1 }
                isHalted = true
                return .failed(SQLiteError(code: .error, message: "\(error)"))
            }
        }
    }

    private func apply(_ batch: WriteBatch, on connection: Connection) throws -> CommitReport {
        var report = CommitReport()
        for operation in batch.operations {
            switch operation {
            case .insert(let request):
                let assignsKey = request.row == nil
                let statement = try statement(.insert(table: request.table, assignsKey: assignsKey), on: connection)
                var arguments = request.values
                if assignsKey { arguments.remove(at: tables[request.table].primaryKeyIndex) }
                try statement.run(arguments)
                if assignsKey { report.assignedKeys[request.id] = .integer(connection.lastInsertRowID) }
            case .update(let row, let cells):
                let shape = StatementShape.update(
                    table: row.table,
                    sets: cells.compactMap { if case .set = $0.write { $0.column } else { nil } },
                    adds: cells.compactMap { if case .add = $0.write { $0.column } else { nil } }
                )
                let statement = try statement(shape, on: connection)
                var arguments: [SQLValue] = cells.compactMap { if case .set(let value) = $0.write { value } else { nil } }
                arguments += cells.compactMap { if case .add(let delta) = $0.write { .integer(delta) } else { nil } }
                arguments.append(row.key)
                try statement.bind(arguments)
                defer { statement.reset() }
                if case .update(_, _, let adds) = shape, !adds.isEmpty {
                    if try statement.step() {
                        for (offset, column) in adds.enumerated() {
                            report.counterValues.append((CellReference(row: row, column: column), statement.value(at: offset)))
                        }
                    }
                }
                while try statement.step() {}
            case .delete(let row):
                try statement(.delete(table: row.table), on: connection).run([row.key])
            case .deleteAll(let table):
                try connection.execute("DELETE FROM \(quoteIdentifier(tables[table].name))")
            }
            statistics.withLock { $0.rowStatements += 1 }
        }
        return report
    }

    private func statement(_ shape: StatementShape, on connection: Connection) throws -> Statement {
        if let statement = statements[shape] {
            statement.reset()
            return statement
        }
        let statement = try connection.makeStatement(shape.sql(tables: tables))
        statements[shape] = statement
        return statement
    }
}

/// The form of a writer statement; each form is compiled once and reused.
private enum StatementShape: Hashable {
    case insert(table: Int, assignsKey: Bool)
    case update(table: Int, sets: [Int], adds: [Int])
    case delete(table: Int)

    func sql(tables: [TableSchema]) -> String {
        switch self {
        case .insert(let table, let assignsKey):
            let schema = tables[table]
            let columns = schema.columns.filter { !(assignsKey && $0.isPrimaryKey) }.map { quoteIdentifier($0.name) }
            let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
            return "INSERT INTO \(quoteIdentifier(schema.name)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))"
        case .update(let table, let sets, let adds):
            let schema = tables[table]
            let assignments = sets.map { "\(quoteIdentifier(schema.columns[$0].name)) = ?" }
                + adds.map { "\(quoteIdentifier(schema.columns[$0].name)) = \(quoteIdentifier(schema.columns[$0].name)) + ?" }
            var sql = "UPDATE \(quoteIdentifier(schema.name)) SET \(assignments.joined(separator: ", ")) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ?"
            if !adds.isEmpty {
                sql += " RETURNING " + adds.map { quoteIdentifier(schema.columns[$0].name) }.joined(separator: ", ")
            }
            return sql
        case .delete(let table):
            let schema = tables[table]
            return "DELETE FROM \(quoteIdentifier(schema.name)) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ?"
        }
    }
}
