/// One open level of `ModelStore.transaction { }`.
struct TransactionLevel {
    /// Pending changes as they were when the level began, restored if it fails.
    let pending: PendingChanges
    /// Where the level's changes start in the log.
    let logStart: Int
}

/// A change made inside a transaction, delivered to feeds when the outermost level ends.
enum LoggedChange {
    case update(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin)
    case delete(table: Int, key: SQLValue, object: any TrackedModel, values: [SQLValue], origin: ChangeOrigin)
}

extension ModelRegistrar {
    var isInTransaction: Bool { !transactionLevels.isEmpty }

    func beginTransaction() {
        transactionLevels.append(TransactionLevel(pending: pending, logStart: transactionLog.count))
    }

    /// Ends the innermost level. On success an inner level merges into its parent; the
    /// outermost delivers one event per subscriber and row. On failure the level's changes are
    /// undone: values restored, deleted objects attached again, nothing queued or delivered.
    func endTransaction(succeeded: Bool) {
        let level = transactionLevels[transactionLevels.count - 1]
        if !succeeded {
            // Undo while the level is still open, so that the undoing writes are logged (and
            // then dropped with the level's changes) instead of delivered.
            let undone = Array(transactionLog[level.logStart...])
            applying(.local) {
                for change in undone.reversed() {
                    switch change {
                    case .update(let table, let key, let column, let old, _, _):
                        try? object(table: table, key: key)?._$apply(old, toColumn: column)
                    case .delete(let table, let key, let object, _, _):
                        attach(object, table: table, key: key)
                    }
                }
            }
            transactionLog.removeSubrange(level.logStart...)
            pending = level.pending
        }
        transactionLevels.removeLast()
        guard transactionLevels.isEmpty else { return }
        let log = transactionLog
        transactionLog.removeAll()
        for event in Self.events(from: log, schemas: schemas) {
            feeds.deliver(event.event, table: event.table)
        }
        if !pending.isEmpty { queued() }
    }

    /// The net change of each row in a transaction's log, in the order rows were first touched.
    /// A value changed and changed back is no change; a deleted row reports its deletion only.
    private static func events(from log: [LoggedChange], schemas: [TableSchema]) -> [(table: Int, event: ChangeEvent)] {
        struct Net {
            var columns: [Int: (old: SQLValue, new: SQLValue)] = [:]
            var deletion: ChangeEvent?
            var origin = ChangeOrigin.local
        }
        var order: [RowReference] = []
        var rows: [RowReference: Net] = [:]
        for change in log {
            switch change {
            case .update(let table, let key, let column, let old, let new, let origin):
                let row = RowReference(table: table, key: key)
                if rows[row] == nil { order.append(row) }
                let first = rows[row]?.columns[column]?.old ?? old
                rows[row, default: Net()].columns[column] = (first, new)
                rows[row]!.origin = origin
            case .delete(let table, let key, _, let values, let origin):
                let row = RowReference(table: table, key: key)
                if rows[row] == nil { order.append(row) }
                let changes = schemas[table].columns.enumerated().map { index, column in
                    ColumnChange(column: column.name, index: index, old: rows[row]?.columns[index]?.old ?? values[index], new: .null)
                }
                rows[row, default: Net()].deletion = ChangeEvent(table: schemas[table].name, key: key, kind: .delete, changes: changes, origin: origin)
            }
        }
        return order.compactMap { row in
            let net = rows[row]!
            if let deletion = net.deletion { return (row.table, deletion) }
            let changes = net.columns.sorted { $0.key < $1.key }.compactMap { index, values in
                values.old == values.new ? nil
                    : ColumnChange(column: schemas[row.table].columns[index].name, index: index, old: values.old, new: values.new)
            }
            guard !changes.isEmpty else { return nil }
            return (row.table, ChangeEvent(table: schemas[row.table].name, key: row.key, kind: .update, changes: changes, origin: net.origin))
        }
    }
}
