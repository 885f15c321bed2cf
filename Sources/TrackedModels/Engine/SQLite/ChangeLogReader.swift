/// Reads the change log on the database worker's connection and queue, past its last position.
///
/// Running on the worker's queue makes "skip our own commits" exact: inside a flush, the
/// worker first reads what others committed, then writes, then moves past its own entries.
/// Outside flushes, `PRAGMA data_version` says whether anyone else committed at all.
final class ChangeLogReader {
    private let schemas: [TableSchema]
    private let layouts: [ChangeLog.Layout]
    private let tableIndexByName: [String: Int]
    private let retention: Int64
    private(set) var position: Int64 = 0
    private var dataVersion: SQLValue = .null
    /// Whether the log had grown past twice its retention when last read.
    private(set) var needsPruning = false

    init(schemas: [TableSchema], layouts: [ChangeLog.Layout], retention: Int, connection: Connection) throws {
        self.schemas = schemas
        self.layouts = layouts
        self.retention = Int64(max(retention, 1))
        tableIndexByName = Dictionary(schemas.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        position = try Self.lastSequence(on: connection)
        dataVersion = try connection.scalar("PRAGMA data_version")
    }

    /// Whether another connection committed since the last look.
    func othersCommitted(on connection: Connection) throws -> Bool {
        let version = try connection.scalar("PRAGMA data_version")
        defer { dataVersion = version }
        return version != dataVersion
    }

    /// Reads the entries past the position, merges them per row, and reloads those rows.
    func collect(on connection: Connection) throws -> ExternalChangeBatch {
        var batch = ExternalChangeBatch()
        let prunedThrough = try connection.scalar("SELECT pruned_through FROM \(ChangeLog.stateTable) WHERE id = 1")
        let last = try Self.lastSequence(on: connection)
        if case .integer(let pruned) = prunedThrough { needsPruning = last - pruned > 2 * retention }
        // Entries this reader has not seen were pruned, or the log was emptied by hand.
        if case .integer(let pruned) = prunedThrough, pruned > position || last < position {
            batch.resetTables = Array(schemas.indices)
            position = last
            return batch
        }
        let entries = try connection.cachedStatement("SELECT seq, tbl, row_key, kind, mask FROM \(ChangeLog.table) WHERE seq > ? ORDER BY seq")
            .rows([.integer(position)])
        for entry in entries {
            if case .integer(let sequence) = entry[0] { position = max(position, sequence) }
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

    /// Merges log entries (seq, tbl, row_key, kind, mask) per row, in the order rows first
    /// appear, and reloads the rows that are still there.
    private func merge(_ entries: [[SQLValue]], into batch: inout ExternalChangeBatch, on connection: Connection) throws {
        var order: [RowReference] = []
        // `replaced`: the row was deleted and inserted again, so it is another row now.
        var merged: [RowReference: (kind: ChangeLog.Kind, mask: Int64, replaced: Bool)] = [:]
        for entry in entries {
            guard case .text(let name) = entry[1], case .integer(let kindValue) = entry[3], case .integer(let mask) = entry[4],
                  let table = tableIndexByName[name]
            else { continue }
            if kindValue == ChangeLog.tableReset {
                if !batch.resetTables.contains(table) { batch.resetTables.append(table) }
                continue
            }
            guard let kind = ChangeLog.Kind(rawValue: kindValue) else { continue }
            let row = RowReference(table: table, key: entry[2])
            if let previous = merged[row] {
                let kind: ChangeLog.Kind = switch (previous.kind, kind) {
                case (_, .delete): .delete
                case (.insert, .update): .insert
                default: kind
                }
                let replaced = previous.replaced || (previous.kind == .delete && kind == .insert)
                merged[row] = (kind, previous.mask | mask, replaced)
            } else {
                order.append(row)
                merged[row] = (kind, mask, false)
            }
        }
        for row in order {
            let (kind, mask, replaced) = merged[row]!
            let schema = schemas[row.table]
            let values = kind == .delete ? nil : try reload(row, schema: schema, on: connection)
            let columns = layouts[row.table].columns(in: mask, modelColumnCount: schema.columns.count)
            let rowKind: ExternalChangeBatch.Row.Kind = switch (kind, values) {
            case (.delete, _), (_, nil): .delete
            case (.insert, _): .insert
            case (.update, _): .update
            }
            // A row deleted and inserted again is told as that: the store's changes to the old
            // row do not carry over to the new one.
            if replaced, rowKind == .insert {
                batch.rows.append(.init(table: row.table, key: row.key, kind: .delete, columns: columns, values: nil))
            }
            batch.rows.append(.init(table: row.table, key: row.key, kind: rowKind, columns: columns, values: values))
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
        position = try Self.lastSequence(on: connection)
        dataVersion = try connection.scalar("PRAGMA data_version")
        return try prune(on: connection, last: position)
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

    /// Goes back to a position after a failed read or a rolled-back transaction, and forgets
    /// the data version, so that the next look reads again even if nobody commits meanwhile.
    func rewind(to position: Int64) {
        self.position = position
        dataVersion = .null
    }

    private func reload(_ row: RowReference, schema: TableSchema, on connection: Connection) throws -> [SQLValue]? {
        try connection.cachedStatement(schema.selectByKeySQL).rows([row.key]).first
    }

    private static func lastSequence(on connection: Connection) throws -> Int64 {
        if case .integer(let sequence) = try connection.scalar("SELECT max(seq) FROM \(ChangeLog.table)") { return sequence }
        return 0
    }
}
