extension ModelStore {
    /// Checks for other connections' commits now and returns once what they changed has been
    /// applied and delivered, instead of waiting for the next poll.
    ///
    /// ```swift
    /// try await store.refreshExternalChanges()   // for example when the app comes to the front
    /// ```
    public func refreshExternalChanges() async throws {
        try checkOpen("refresh external changes")
        lastPoll += 1
        let id = lastPoll
        await withCheckedContinuation { continuation in
            pollWaiters[id] = continuation
            writer.pollNow(id)
        }
    }

    func pollFinished(_ id: UInt64) {
        pollWaiters.removeValue(forKey: id)?.resume()
    }

    /// Applies what other connections committed, through the registrar with origin
    /// `.external`: one event per subscriber and row.
    ///
    /// A cell with a local write not yet committed keeps the local value (it commits later and
    /// wins, as last writer); a counter with only increments pending shows the committed value
    /// plus them. Rows the store holds no object for reach their subscribers with `.null` as
    /// the old values.
    func apply(_ batch: ExternalChangeBatch) {
        registrar.applying(.external) {
            registrar.beginTransaction()
            for row in batch.rows { apply(row) }
            registrar.endTransaction(succeeded: true)
        }
        for table in batch.resetTables { reset(table: table) }
    }

    private func apply(_ change: ExternalChangeBatch.Row) {
        let schema = registrar.schemas[change.table]
        guard let object = registrar.object(table: change.table, key: change.key) else {
            let changes = change.columns.map { index in
                ColumnChange(
                    column: schema.columns[index].name, index: index,
                    old: .null, new: change.values?[index] ?? .null
                )
            }
            let kind: ChangeEvent.Kind = switch change.kind {
            case .update: .update
            case .insert: .insert
            case .delete: .delete
            }
            registrar.feeds.deliver(ChangeEvent(table: schema.name, key: change.key, kind: kind, changes: changes, origin: .external), table: change.table)
            return
        }
        guard let values = change.values else {
            registrar.didDelete(object, table: change.table, origin: .external)
            return
        }
        for column in change.columns where column != schema.primaryKeyIndex {
            guard let value = externalValue(values[column], for: CellReference(row: RowReference(table: change.table, key: change.key), column: column)) else { continue }
            try? object._$apply(value, toColumn: column)
        }
    }

    /// The value to show for a committed value, given this store's uncommitted writes to the
    /// cell; `nil` to keep the local value.
    private func externalValue(_ committed: SQLValue, for cell: CellReference) -> SQLValue? {
        var delta: Int64 = 0
        if let inFlight = cellsInFlight()[cell] {
            guard inFlight.sets == 0 else { return nil }
            delta = inFlight.delta
        }
        switch registrar.pending.write(to: cell) {
        case nil: break
        case .add(let pending)?: delta &+= pending
        case .set?: return nil
        }
        guard delta != 0 else { return committed }
        guard case .integer(let value) = committed else { return committed }
        return .integer(value &+ delta)
    }

    /// After falling behind a pruned log: reload every object of the table, drop those whose
    /// row is gone, and tell the table's subscribers to re-read.
    private func reset(table: Int) {
        let schema = registrar.schemas[table]
        let objects = registrar.tables[table].objects
        registrar.applying(.external) {
            registrar.beginTransaction()
            for (key, object) in objects {
                // A failed read keeps the object as it is; only a row that is gone detaches it.
                guard let rows = try? reader.cachedStatement(schema.selectByKeySQL).rows([key]) else { continue }
                guard let values = rows.first else {
                    registrar.detach(table: table, key: key)
                    continue
                }
                for column in schema.columns.indices where column != schema.primaryKeyIndex {
                    let cell = CellReference(row: RowReference(table: table, key: key), column: column)
                    if let value = externalValue(values[column], for: cell) { try? object._$apply(value, toColumn: column) }
                }
            }
            registrar.endTransaction(succeeded: true)
        }
        registrar.feeds.deliverReset(table: table, origin: .external)
    }
}
