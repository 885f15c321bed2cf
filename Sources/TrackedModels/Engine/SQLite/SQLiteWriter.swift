import Dispatch
import Logging

/// The writing half of the SQLite engine: the writer's own connection, its statements, the
/// change log, and the WAL file's wake-up.
///
/// Each commit is one `BEGIN IMMEDIATE` transaction: it takes the write lock first, so that a
/// busy database fails at the start instead of half-way, and so that reading others' log
/// entries, writing, and noting the log's end happen with nobody else committing in between.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_transaction.html>
final class SQLiteWriter: EngineWriter {
    private let logger: Logger
    private var connection: Connection?
    private var statements = StatementCache<StatementShape>(capacity: 256)
    private let changeLog: ChangeLogReader?
    private let tables: [TableSchema]
    private let actionTargets: Set<Int>
    /// Each table's to-one columns, where placeholders of assigned keys may stand.
    private let linkColumns: [[Int]]
    /// The table each to-one column's declared foreign key points at (``KeyedInserts``).
    private let linkTargets: LinkTargets
    /// The WAL file, whose writes mean another connection may have committed; nil for none.
    private let walFile: String?
    private var walSignal: FileChangeSignal?

    /// Takes over a connection opened for writing.
    ///
    /// - Parameters:
    ///   - changeLog: Reads other connections' changes; `nil` when the store does not watch
    ///     for them.
    ///   - walFile: The WAL file to watch for other connections' commits; `nil` for none.
    /// - Parameter actionTargets: The tables whose rows' deletion the database acts on (a
    ///   foreign key's `ON DELETE`): a commit that deletes one reads back what the database did.
    /// - Parameter linkTargets: The table each to-one column's declared foreign key points at,
    ///   by table: a link written ahead of its target's insert waits for it (``KeyedInserts``).
    init(connection: Connection, tables: [TableSchema], changeLog: ChangeLogReader?, walFile: String?, actionTargets: Set<Int>, linkTargets: LinkTargets, logger: Logger) {
        self.actionTargets = actionTargets
        self.logger = logger
        self.connection = connection
        self.tables = tables
        linkColumns = tables.map(\.relationshipColumns)
        self.linkTargets = linkTargets
        self.changeLog = changeLog
        self.walFile = walFile
    }

    func commit(_ units: [WriteUnit], rows: BulkRows?, earlierKeys: [UInt64: SQLValue], willCommit: (CommitReport) throws -> Void) throws -> EngineCommit {
        let connection = try open()
        let logPosition = changeLog?.position
        do {
            try connection.execute("BEGIN IMMEDIATE TRANSACTION")
        } catch let error as SQLiteError {
            throw EngineFailure.transaction(error.storeError)
        }
        do {
            var commit = EngineCommit(report: CommitReport(), external: ExternalChangeBatch())
            do {
                if let changeLog {
                    commit.external = try changeLog.collect(on: connection)
                    repair(changeLog, on: connection)
                }
            } catch let error as SQLiteError {
                throw EngineFailure.transaction(error.storeError)
            }
            var waiting = WaitingLinks()
            let keyedInserts = KeyedInserts(units, targets: linkTargets)
            var position = -1
            for (unitIndex, unit) in units.enumerated() {
                for (operationIndex, written) in unit.operations.enumerated() {
                    position += 1
                    let (operation, deferred) = written.resolvingPlaceholders(linkColumns: linkColumns, later: keyedInserts, at: position) { commit.report.assignedKeys[$0] ?? earlierKeys[$0] }
                    waiting.drop(overwrittenBy: operation, keys: commit.report.assignedKeys)
                    waiting.add(deferred, unit: unitIndex, operation: operationIndex)
                    do {
                        if let changeLog, let deleted = deletedActionTarget(operation) {
                            // What the database does to other rows on its own as this delete runs
                            // (a cascade, a SET NULL) is heard as another connection's change.
                            let before = try changeLog.newestSequence(on: connection)
                            try apply(operation, on: connection, into: &commit.report)
                            let after = try changeLog.newestSequence(on: connection)
                            let actions = try changeLog.actions(ofDeleteOf: deleted.row, table: deleted.table, after: before, through: after, on: connection)
                            commit.external.add(actions)
                        } else {
                            try apply(operation, on: connection, into: &commit.report)
                        }
                    } catch let error as SQLiteError {
                        throw EngineFailure.operation(unit: unitIndex, operation: operationIndex, error.storeError)
                    }
                    if !waiting.isEmpty {
                        try writeLinks(waiting.takeReady(keys: commit.report.assignedKeys) { keyedInserts.key(ofInsert: $0, through: position) }, on: connection, into: &commit.report)
                    }
                }
            }
            if let rows {
                do {
                    try insert(rows, on: connection, into: &commit.report)
                } catch let error as SQLiteError {
                    throw EngineFailure.transaction(error.storeError)
                }
            }
            do {
                if let pruned = try changeLog?.skipOwnEntries(on: connection) { logPruning(pruned) }
                try willCommit(commit.report)
                try connection.execute("COMMIT TRANSACTION")
            } catch let error as SQLiteError {
                throw EngineFailure.transaction(error.storeError)
            } catch let error as StoreError {
                throw EngineFailure.transaction(error)
            }
            return commit
        } catch {
            // An explicit rollback: after some errors SQLite already rolled back, and then the
            // ROLLBACK itself fails, which is fine.
            if connection.isInTransaction { try? connection.execute("ROLLBACK TRANSACTION") }
            if let logPosition { changeLog?.rewind(to: logPosition) }
            throw error
        }
    }

    /// Writes links that waited for their target's key (see ``WaitingLinks``); a row deleted
    /// since has nothing to write. A refusal is the operation's that made the link.
    private func writeLinks(_ ready: [WaitingLinks.Ready], on connection: Connection, into report: inout CommitReport) throws {
        for link in ready {
            let schema = tables[link.link.table]
            let sql = "UPDATE \(quoteIdentifier(schema.name)) SET \(quoteIdentifier(schema.columns[link.link.column].name)) = ? WHERE \(quoteIdentifier(schema.primaryKey.name)) = ?"
            do {
                try connection.cachedStatement(sql).run([link.key, link.row])
            } catch let error as SQLiteError {
                throw EngineFailure.operation(unit: link.unit, operation: link.operation, error.storeError)
            }
            report.statementCount += 1
        }
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

    func readRows(table: Int, keys: [SQLValue]) throws -> [[SQLValue]?] {
        let connection = try open()
        return try translatingSQLiteErrors {
            try connection.withTransaction(.deferred) {
                try keys.map { try connection.cachedStatement(tables[table].selectByKeySQL).rows([$0]).first }
            }
        }
    }

    func readChangeLog(answeringSignal: Bool) throws -> ExternalChangeBatch? {
        try translatingSQLiteErrors(readChangeLogEntries)
    }

    private func readChangeLogEntries() throws -> ExternalChangeBatch? {
        let connection = try open()
        guard let changeLog, try changeLog.othersCommitted(on: connection) else { return nil }
        let position = changeLog.position
        do {
            // Triggers found gone are installed again in the same transaction, before their
            // tables' reset is applied: every commit after it is logged, every one before it
            // shows in its reload.
            return try connection.withTransaction(changeLog.schemaChanged(on: connection) ? .immediate : .deferred) {
                let batch = try changeLog.collect(on: connection)
                repair(changeLog, on: connection)
                return batch
            }
        } catch {
            // A failed read is retried on the next look: the position only moves on success.
            changeLog.rewind(to: position)
            throw error
        }
    }

    /// A store that only reads prunes too, so that the log cannot grow without bound when other
    /// processes do the writing. Busy is fine: the next look that reads new commits tries again
    /// (not every poll, which would wait for the lock each time).
    func tidyChangeLog() {
        guard let changeLog, changeLog.needsPruning, let connection = try? open() else { return }
        guard let pruned = try? connection.withTransaction(.immediate, { try changeLog.prune(on: connection) }) else {
            changeLog.postponePruning()
            return
        }
        logPruning(pruned)
    }

    /// Installs again what a look found gone from the change log. A failure (busy, a model
    /// table dropped) is logged and left to the next look; the look's commit goes on.
    private func repair(_ changeLog: ChangeLogReader, on connection: Connection) {
        guard !changeLog.notLogged.isEmpty else { return }
        do {
            try connection.withTransaction { try changeLog.repair(on: connection) }
        } catch {
            logger.warning("the change log's triggers are gone and could not be installed again; the next look tries again", metadata: ["error": "\(error)"])
        }
    }

    private func logPruning(_ through: Int64?) {
        guard let through else { return }
        logger.debug("pruned the change log", metadata: ["through": "\(through)"])
    }

    func watchForCommits(on queue: DispatchQueue, wake: @escaping @Sendable () -> Void) {
        guard let walFile, walSignal == nil else { return }
        walSignal = FileChangeSignal(path: walFile, queue: queue, handler: wake)
    }

    /// False: SQLite writes a commit's WAL frames, which wake a watcher, before it publishes
    /// the commit.
    var signalsReadableCommits: Bool { false }

    func close() {
        walSignal?.cancel()
        walSignal = nil
        statements.removeAll()
        connection = nil
    }

    /// Reads or sets a pragma of the writer connection, for tests: `synchronous` (1 = NORMAL,
    /// 2 = FULL), or `max_page_count` to simulate a full disk.
    func pragma(_ name: String, _ value: Int? = nil) throws -> SQLValue {
        try open().scalar("PRAGMA \(name)\(value.map { " = \($0)" } ?? "")")
    }

    private func open() throws -> Connection {
        guard let connection else { throw StoreError.closed(operation: "use the database") }
        return connection
    }

    // MARK: - Operations

    private func apply(_ operation: WriteOperation, on connection: Connection, into report: inout CommitReport) throws {
        switch operation {
        case .insert(let request):
            let assignsKey = request.row == nil
            let statement = try statement(.insert(table: request.table, assignsKey: assignsKey), on: connection)
            var arguments = request.values
            if assignsKey { arguments.remove(at: tables[request.table].primaryKeyIndex) }
            try statement.run(arguments)
            let key = request.row?.key ?? .integer(connection.lastInsertRowID)
            if assignsKey { report.assignedKeys[request.id] = key }
            report.forgetCounters(of: RowReference(table: request.table, key: key), columns: request.values.indices)
        case .update(let row, let cells):
            let sets = cells.compactMap { if case .set = $0.write { $0.column } else { nil } }
            let adds = cells.compactMap { if case .add = $0.write { $0.column } else { nil } }
            let statement = try statement(.update(table: row.table, sets: sets, adds: adds), on: connection)
            var arguments: [SQLValue] = cells.compactMap { if case .set(let value) = $0.write { value } else { nil } }
            arguments += cells.compactMap { if case .add(let delta) = $0.write { .integer(delta) } else { nil } }
            arguments.append(row.key)
            try statement.bind(arguments)
            defer { statement.reset() }
            report.forgetCounters(of: row, columns: sets)
            var updated = false
            if !adds.isEmpty {
                if try statement.step() {
                    updated = true
                    for (offset, column) in adds.enumerated() {
                        let value = statement.value(at: offset)
                        // SQLite turns an integer sum that overflows into a REAL.
                        guard case .integer = value else {
                            let problem = if case .real = value { "the sum is not a 64-bit integer (it overflows, or the column held a REAL)" } else { "the column holds \(value.storageClass), not an integer" }
                            throw SQLiteError(
                                code: .mismatch,
                                message: "adding to \(tables[row.table].name).\(tables[row.table].columns[column].name) of row \(row.key): \(problem)",
                                sql: statement.sql
                            )
                        }
                        report.counterValues[CellReference(row: row, column: column)] = value
                    }
                }
                while try statement.step() {}
            } else {
                while try statement.step() {}
                updated = connection.changes > 0
            }
            guard updated else {
                throw SQLiteError(
                    code: .notFound,
                    message: "row \(row.key) of \(tables[row.table].name) is no longer in the database (another connection deleted it or changed its key), so this change to it cannot be stored",
                    sql: statement.sql
                )
            }
        case .delete(let row):
            try statement(.delete(table: row.table), on: connection).run([row.key])
            report.forgetCounters(of: row, columns: tables[row.table].columns.indices)
        case .deleteAll(let table):
            try connection.execute("DELETE FROM \(quoteIdentifier(tables[table].name))")
            report.counterValues = report.counterValues.filter { $0.key.row.table != table }
        }
        report.statementCount += 1
    }

    /// Inserts streamed rows as they arrive, with one prepared statement per form.
    private func insert(_ rows: BulkRows, on connection: Connection, into report: inout CommitReport) throws {
        let schema = tables[rows.table]
        let keyed = try statement(.insert(table: rows.table, assignsKey: false), on: connection)
        let keyless = schema.assignsPrimaryKey ? try statement(.insert(table: rows.table, assignsKey: true), on: connection) : nil
        guard let first = try rows.next() else { return }  // no row: no trigger to swap, no reset
        try ChangeLog.insertingInBulk(into: schema.name, on: connection) {
            try insert(first, rows, schema: schema, keyed: keyed, keyless: keyless, into: &report)
        }
    }

    private func insert(_ first: [[SQLValue]], _ rows: BulkRows, schema: TableSchema, keyed: Statement, keyless: Statement?, into report: inout CommitReport) throws {
        var chunk = first
        while true {
            for values in chunk {
                do {
                    if let keyless, values[schema.primaryKeyIndex] == .null {
                        var arguments = values
                        arguments.remove(at: schema.primaryKeyIndex)
                        try keyless.run(arguments)
                    } else {
                        try keyed.run(values)
                    }
                } catch let error as SQLiteError {
                    let row = values[schema.primaryKeyIndex] == .null ? "a new row" : "row \(values[schema.primaryKeyIndex])"
                    throw SQLiteError(code: error.code, message: "inserting \(row) into \(schema.name): \(error.message)", sql: error.sql)
                }
            }
            report.statementCount += chunk.count
            guard let following = try rows.next() else { return }
            chunk = following
        }
    }

    private func statement(_ shape: StatementShape, on connection: Connection) throws -> Statement {
        try statements.statement(for: shape) { try connection.makeStatement(shape.sql(tables: tables)) }
    }
}

/// The form of a writer statement; each form is compiled once and reused while cached.
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
