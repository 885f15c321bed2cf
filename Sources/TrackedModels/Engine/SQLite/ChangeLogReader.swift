/// Reads the change log on the database worker's connection and queue, past its last position.
///
/// Running on the worker's queue makes "skip our own commits" exact: inside a flush, the
/// worker first reads what others committed, then writes, then moves past its own entries.
/// Outside flushes, `PRAGMA data_version` says whether anyone else committed at all.
///
/// Nothing goes deaf silently: when the schema changed (`PRAGMA schema_version`), a look checks
/// that the log and each table's triggers are as they should be, and that the tables still fit
/// the models (a difference is published on `writeErrors`). Tables whose triggers went
/// (dropped by hand, or with a table a migration tool rebuilt) are heard as reset, once the
/// triggers are installed again (``repair(on:)``): what others committed meanwhile was not
/// logged, and the reset's reload shows it.
final class ChangeLogReader {
    private let schemas: [TableSchema]
    private var layouts: [ChangeLogEntries.Layout]
    private let tableIndexByName: [String: Int]
    private let retention: Int64
    /// The newest entry read.
    private var sequence: Int64 = 0
    private var dataVersion: SQLValue = .null
    /// The schema's version when the log was last found whole.
    private var schemaVersion: SQLValue
    /// The tables the last look found without their triggers (every table, when the log itself
    /// was gone): to be repaired before that look's batch is applied.
    private(set) var notLogged: [Int] = []
    /// The tables that no longer fit their models (altered or dropped under the store): their
    /// entries are left out, and their changes are heard again, as a reset, once they fit.
    private var unfit: Set<Int> = []
    /// The differences last published: the same ones are not published again.
    private var reported: [SchemaDifference] = []
    /// Whether the log had grown past twice its retention when last read.
    private(set) var needsPruning = false

    init(schemas: [TableSchema], layouts: [ChangeLogEntries.Layout], retention: Int, connection: Connection) throws {
        self.schemas = schemas
        self.layouts = layouts
        self.retention = Int64(max(retention, 1))
        tableIndexByName = Dictionary(schemas.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        sequence = try Self.lastSequence(on: connection)
        dataVersion = try connection.scalar("PRAGMA data_version")
        schemaVersion = try connection.scalar("PRAGMA schema_version")
    }

    /// Where the reader stands: what a failed read or a rolled-back transaction goes back to,
    /// with what its look found of the tables' fit (heard again then).
    struct Position {
        fileprivate var sequence: Int64
        fileprivate var unfit: Set<Int>
        fileprivate var reported: [SchemaDifference]
    }

    var position: Position { Position(sequence: sequence, unfit: unfit, reported: reported) }

    /// Whether another connection committed since the last look.
    func othersCommitted(on connection: Connection) throws -> Bool {
        let version = try connection.scalar("PRAGMA data_version")
        defer { dataVersion = version }
        return version != dataVersion
    }

    /// Reads the entries past the position, merges them per row, and reloads those rows.
    func collect(on connection: Connection) throws -> ExternalChangeBatch {
        var batch = ExternalChangeBatch()
        let version = try connection.scalar("PRAGMA schema_version")
        if version != schemaVersion {
            let differences = try schemas.flatMap { try $0.differences(from: connection) }
            if differences != reported { batch.schemaDifferences = differences }
            reported = differences
            let nowUnfit = Set(differences.compactMap { tableIndexByName[$0.table] })
            layouts = try ChangeLog.layouts(of: schemas, on: connection)
            notLogged = try ChangeLog.tablesNotLogged(schemas, on: connection)
            if notLogged.isEmpty { schemaVersion = version }
            // Heard again once it fits: what was committed meanwhile shows in the reload.
            batch.resetTables = Set(notLogged).union(unfit).subtracting(nowUnfit).sorted()
            unfit = nowUnfit
            // A log made again starts empty: everything it will hold is new to this reader.
            // (Its state alone gone: the entries are read once it is made again.)
            guard try ChangeLog.hasEntries(on: connection) else {
                sequence = 0
                return batch
            }
            guard try ChangeLog.isInstalled(on: connection) else { return batch }
        }
        let prunedThrough = try connection.scalar("SELECT pruned_through FROM \(ChangeLog.stateTable) WHERE id = 1")
        let last = try Self.lastSequence(on: connection)
        if case .integer(let pruned) = prunedThrough { needsPruning = last - pruned > 2 * retention }
        // Entries this reader has not seen were pruned, or the log was emptied by hand.
        if case .integer(let pruned) = prunedThrough, pruned > sequence || last < sequence {
            batch.resetTables = schemas.indices.filter { !unfit.contains($0) }
            sequence = last
            return batch
        }
        let entries = try connection.cachedStatement("SELECT seq, tbl, row_key, kind, mask FROM \(ChangeLog.table) WHERE seq > ? ORDER BY seq")
            .rows([.integer(sequence)])
        for entry in entries {
            if case .integer(let sequence) = entry[0] { self.sequence = max(self.sequence, sequence) }
        }
        try merge(entries, into: &batch, on: connection)
        return batch
    }

    /// The log's newest entry, inside the writer's transaction: before and after one of its
    /// statements, the range of that statement's entries.
    func newestSequence(on connection: Connection) throws -> Int64 {
        try Self.lastSequence(on: connection)
    }

    /// What the database did on its own while one of this store's deletes ran (a foreign key's
    /// `ON DELETE CASCADE` or `SET NULL`): the entries past `after` through `through`, but for
    /// the deleted row (or, for a delete of every row, the table's rows), merged and reloaded as
    /// another connection's changes are. The position does not move.
    func actions(ofDeleteOf deleted: RowReference?, table: Int, after: Int64, through: Int64, on connection: Connection) throws -> ExternalChangeBatch {
        var batch = ExternalChangeBatch()
        guard through > after else { return batch }
        let entries = try connection.cachedStatement("SELECT seq, tbl, row_key, kind, mask FROM \(ChangeLog.table) WHERE seq > ? AND seq <= ? ORDER BY seq")
            .rows([.integer(after), .integer(through)])
            .filter { entry in
                guard case .text(let name) = entry[1], let entryTable = tableIndexByName[name] else { return false }
                guard let deleted else { return entryTable != table }
                return RowReference(table: entryTable, key: entry[2]) != deleted
            }
        try merge(entries, into: &batch, on: connection)
        return batch
    }

    /// Merges log rows (seq, tbl, row_key, kind, mask) per row and reloads the rows that are
    /// still there.
    private func merge(_ rows: [[SQLValue]], into batch: inout ExternalChangeBatch, on connection: Connection) throws {
        let entries = rows.compactMap { row -> ChangeLogEntries.Entry? in
            guard case .text(let name) = row[1], case .integer(let kind) = row[3], case .integer(let mask) = row[4],
                  let table = tableIndexByName[name], !unfit.contains(table)
            else { return nil }
            return ChangeLogEntries.Entry(table: table, key: row[2], kind: kind, mask: mask)
        }
        try ChangeLogEntries.merge(entries, schemas: schemas, layouts: layouts, into: &batch) { table, keys in
            var found: [SQLValue: [SQLValue]] = [:]
            let statement = try connection.cachedStatement(schemas[table].selectByKeySQL)
            for key in keys {
                if let values = try statement.rows([key]).first { found[key] = values }
            }
            return found
        }
    }

    /// Moves past the writer's own entries, made in the current write transaction, notes the
    /// database's version as of this transaction, and prunes the log when it has grown past
    /// twice its retention.
    ///
    /// The version is read inside the transaction: another connection's commit that lands right
    /// after ours changes it, so the next look never mistakes that commit for our own.
    ///
    /// - Returns: The sequence the log was pruned through, if it was.
    func skipOwnEntries(on connection: Connection) throws -> Int64? {
        sequence = try Self.lastSequence(on: connection)
        dataVersion = try connection.scalar("PRAGMA data_version")
        return try prune(on: connection, last: sequence)
    }

    /// Leaves pruning to the next look that reads new entries (a prune that failed: the file
    /// was busy).
    func postponePruning() {
        needsPruning = false
    }

    /// Deletes entries older than the newest `retention`, inside a write transaction, when the
    /// log holds more than twice that. Readers that had not read them yet reset.
    ///
    /// - Parameter last: The log's newest entry, when the caller has just read it.
    /// - Returns: The sequence it pruned through, or nil when the log was short enough.
    @discardableResult
    func prune(on connection: Connection, last known: Int64? = nil) throws -> Int64? {
        let last = try known ?? Self.lastSequence(on: connection)
        guard case .integer(let prunedThrough) = try connection.scalar("SELECT pruned_through FROM \(ChangeLog.stateTable) WHERE id = 1"),
              last - prunedThrough > 2 * retention
        else {
            needsPruning = false
            return nil
        }
        let through = last - retention
        try connection.cachedStatement("DELETE FROM \(ChangeLog.table) WHERE seq <= ?").run([.integer(through)])
        try connection.cachedStatement("UPDATE \(ChangeLog.stateTable) SET pruned_through = ? WHERE id = 1").run([.integer(through)])
        needsPruning = false
        return through
    }

    /// Installs again the triggers (and the log) the last look found missing, so that every
    /// commit from now on is logged, and logs a reset of their tables for every store on the
    /// file (this look's batch resets them here). Runs in the look's write transaction.
    func repair(on connection: Connection) throws {
        guard !notLogged.isEmpty else { return }
        let madeAgain = try !ChangeLog.hasEntries(on: connection)
        layouts = try ChangeLog.install(on: connection, schemas: schemas)
        // A log made again numbers its entries from 1: nothing of it was pruned.
        if madeAgain { try connection.execute("UPDATE \(ChangeLog.stateTable) SET pruned_through = 0") }
        // Other stores find the triggers in place: the reset reaches them through the log.
        for table in notLogged {
            try connection.cachedStatement("INSERT INTO \(ChangeLog.table) (tbl, row_key, kind, mask) VALUES (?, NULL, ?, -1)")
                .run([.text(schemas[table].name), .integer(ChangeLogEntries.tableReset)])
        }
        // Past its own entries: they say what this look's batch says.
        sequence = try Self.lastSequence(on: connection)
        schemaVersion = try connection.scalar("PRAGMA schema_version")
        notLogged = []
    }

    /// Whether the schema changed since the log was last found whole: the next look checks it,
    /// and may install it again (in a write transaction).
    func schemaChanged(on connection: Connection) throws -> Bool {
        try connection.scalar("PRAGMA schema_version") != schemaVersion
    }

    /// Goes back to a position after a failed read or a rolled-back transaction, and forgets
    /// the data and schema versions, so that the next look reads (and checks the log) again
    /// even if nobody commits meanwhile.
    func rewind(to position: Position) {
        sequence = position.sequence
        unfit = position.unfit
        reported = position.reported
        dataVersion = .null
        schemaVersion = .null
    }

    private static func lastSequence(on connection: Connection) throws -> Int64 {
        if case .integer(let sequence) = try connection.scalar("SELECT max(seq) FROM \(ChangeLog.table)") { return sequence }
        return 0
    }
}
