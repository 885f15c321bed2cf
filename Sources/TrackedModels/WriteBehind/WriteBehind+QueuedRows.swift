/// What write-behind's queued changes (in flight, then pending, in program order) say about a
/// row: the values it shows, whether it exists, which rows link to a new one. The overlay rule
/// for single cells is ``WriteBehind/overlay(_:for:)``.
extension WriteBehind {
    /// Whether batches are in flight: the database may hold one before the store hears so.
    var hasBatchesInFlight: Bool { !inFlight.isEmpty }

    /// Every unit not yet committed, in program order: in flight, then pending (walked where
    /// they lie: a read of one row asks several times, and copying them each time cost more
    /// than the walk).
    var queuedUnits: QueuedUnits {
        QueuedUnits(inFlight: inFlight, pending: pending.all)
    }

    /// The units of batches in flight, then the pending ones, as one sequence.
    struct QueuedUnits: Sequence {
        let inFlight: [InFlight]
        let pending: [PendingChanges.Unit]

        struct Iterator: IteratorProtocol {
            let inFlight: [InFlight]
            let pending: [PendingChanges.Unit]
            var batch = 0
            var unit = 0

            mutating func next() -> WriteUnit? {
                while batch < inFlight.count {
                    if unit < inFlight[batch].units.count {
                        unit += 1
                        return inFlight[batch].units[unit - 1].unit
                    }
                    batch += 1
                    unit = 0
                }
                guard unit < pending.count else { return nil }
                unit += 1
                return pending[unit - 1].unit
            }
        }

        func makeIterator() -> Iterator {
            Iterator(inFlight: inFlight, pending: pending)
        }
    }

    /// Calls `body` with each queued operation that touches `row` (names it, or deletes every
    /// row of its table), in program order: the first lookup since the queued units changed
    /// walks them; the lookups that follow it go through a ``QueuedRowIndex`` built then, where
    /// the units hold many operations.
    private func forEachQueuedOperation(touching row: RowReference, _ body: (WriteOperation) -> Void) {
        switch queuedRowIndex {
        case .built(let index):
            index.forEachOperation(touching: row, body)
        case .walked(let operations) where operations >= QueuedRowIndex.Slot.walkedBelow:
            let index = QueuedRowIndex(queuedUnits)
            queuedRowIndex = .built(index)
            index.forEachOperation(touching: row, body)
        case .unused, .walked:
            var operations = 0
            for unit in queuedUnits {
                operations += unit.operations.count
                for operation in unit.operations where operation.touches(row) { body(operation) }
            }
            queuedRowIndex = .walked(operations: operations)
        }
    }

    /// What a row holds once this store's changes not yet committed (in flight, then pending,
    /// in program order) are applied to what is committed; `nil` when there is no row then.
    /// A to-one column written with a ``KeyPlaceholder`` shows NULL, as its object does.
    ///
    /// - Parameter held: Which of this store's batches `committed` holds already, where it was
    ///   read while they committed and the store has yet to hear so: they are not laid over it
    ///   again (an increment would count twice).
    func uncommittedValues(of row: RowReference, over committed: [SQLValue]?, held: CommitProgress = CommitProgress()) -> [SQLValue]? {
        guard hasChanges else { return committed }
        let written = (inFlight.first?.sequence).map { $0 <= held.committedThrough } == true
            ? writtenValues(of: row, over: committed, notHeldBy: held)
            : writtenValues(of: row, over: committed)
        guard var values = written else { return nil }
        for column in linkColumns[row.table] where KeyPlaceholder.request(in: values[column]) != nil { values[column] = .null }
        return values
    }

    /// Whether what a row shows depends on what is committed: false once a queued change
    /// inserts or deletes the whole row (the committed values no longer show through).
    func showsCommittedValues(of row: RowReference) -> Bool {
        guard hasChanges else { return true }
        var shows = true
        forEachQueuedOperation(touching: row) { operation in
            if case .update = operation { return }
            shows = false
        }
        return shows
    }

    /// What the row of an insert whose key the database has yet to assign stores once its
    /// changes not yet committed apply: the insert's values, then the changes made by its key's
    /// placeholder; nil when no such insert is queued. To-one cells hold the placeholders of
    /// new targets' keys, as written.
    func storedValues(ofInsert request: UInt64, table: Int) -> [SQLValue]? {
        let row = RowReference(table: table, key: KeyPlaceholder.value(forInsert: request))
        var values: [SQLValue]?
        for unit in queuedUnits {
            for operation in unit.operations {
                switch operation {
                case .insert(let insert) where insert.id == request: values = insert.values
                case .update(row, let cells):
                    guard var current = values else { continue }
                    for cell in cells { current[cell.column] = cell.write.applied(to: current[cell.column]) }
                    values = current
                default: continue
                }
            }
        }
        return values
    }

    /// The value the last write not yet committed (pending or in flight) stores in a cell, if
    /// that is an assignment or an insert; nil when there is none, or it is a delete.
    func lastStoredValue(of cell: CellReference) -> SQLValue? {
        guard hasChanges else { return nil }
        var last: SQLValue?
        forEachQueuedOperation(touching: cell.row) { operation in
            switch operation {
            case .insert(let insert): last = insert.values[cell.column]
            case .update(_, let cells): if case .set(let value)? = cells.first(where: { $0.column == cell.column })?.write { last = value }
            case .delete, .deleteAll: last = nil
            }
        }
        return last
    }

    /// The insert whose key's placeholder a pending or in-flight write last stored in a
    /// to-one cell, if any: cheap where nothing is in flight (a lookup of the row's units).
    func linkedInsert(of cell: CellReference) -> UInt64? {
        guard hasChanges, linkColumns[cell.row.table].contains(cell.column) else { return nil }
        if inFlight.isEmpty {
            guard case .set(let value)? = pending.write(to: cell) else { return nil }
            return KeyPlaceholder.request(in: value)
        }
        return lastStoredValue(of: cell).flatMap(KeyPlaceholder.request(in:))
    }

    /// The rows of a table whose to-one column's last write is the placeholder of an insert's
    /// key: keyed rows in key order, then inserts waiting for their own key, in program order.
    func rowsLinking(toInsert request: UInt64, table: Int, column: Int) -> [DeferredLink.RowKey] {
        guard hasChanges else { return [] }
        let placeholder = KeyPlaceholder.value(forInsert: request)
        var keyed: [SQLValue: Bool] = [:]
        var inserts: [UInt64: Bool] = [:]
        // A row changed by its key's placeholder is that insert's row.
        func set(_ row: RowReference, _ links: Bool) {
            if let request = KeyPlaceholder.request(in: row.key) { inserts[request] = links } else { keyed[row.key] = links }
        }
        for unit in queuedUnits {
            for operation in unit.operations where operation.table == table {
                switch operation {
                case .insert(let insert):
                    let links = insert.values[column] == placeholder
                    if let row = insert.row { keyed[row.key] = links } else { inserts[insert.id] = links }
                case .update(let row, let cells):
                    if case .set(let value)? = cells.first(where: { $0.column == column })?.write { set(row, value == placeholder) }
                case .delete(let row):
                    set(row, false)
                case .deleteAll:
                    keyed = keyed.mapValues { _ in false }
                    inserts = inserts.mapValues { _ in false }
                }
            }
        }
        return keyed.filter(\.value).keys.sortedInValueOrder().map { .key($0) } + inserts.filter(\.value).keys.sorted().map { .insert($0) }
    }

    private func writtenValues(of row: RowReference, over committed: [SQLValue]?) -> [SQLValue]? {
        var values = committed
        forEachQueuedOperation(touching: row) { Self.apply($0, to: &values) }
        return values
    }

    /// ``writtenValues(of:over:)`` where `committed` holds some batches in flight already:
    /// their units are passed over, but those the database left out of them (the rare read
    /// made between a commit and its report).
    private func writtenValues(of row: RowReference, over committed: [SQLValue]?, notHeldBy held: CommitProgress) -> [SQLValue]? {
        var values = committed
        for batch in inFlight {
            for unit in batch.units where batch.sequence > held.committedThrough || held.leftOut.contains(unit.unit.id) {
                for operation in unit.unit.operations where operation.touches(row) { Self.apply(operation, to: &values) }
            }
        }
        for unit in pending.all {
            for operation in unit.unit.operations where operation.touches(row) { Self.apply(operation, to: &values) }
        }
        return values
    }

    /// Lays one queued operation over a row's values (nil: no row).
    private static func apply(_ operation: WriteOperation, to values: inout [SQLValue]?) {
        switch operation {
        case .insert(let request): values = request.values
        case .update(_, let cells):
            guard var current = values else { return }
            for cell in cells { current[cell.column] = cell.write.applied(to: current[cell.column]) }
            values = current
        case .delete, .deleteAll: values = nil
        }
    }

    /// Whether a change still queued decides the row the database gave the insert with this
    /// request id: an insert of that key (one the database refused shows the row, whatever
    /// its place), or a delete that follows the insert in program order (every change still
    /// queued follows it once it committed). That change, not the insert's object, keeps the
    /// row.
    func decidesRow(_ row: RowReference, afterInsert request: UInt64) -> Bool {
        let units = queuedUnits
        var isAfterInsert = !units.contains { $0.operations.contains { if case .insert(let insert) = $0 { insert.id == request } else { false } } }
        for unit in units {
            for operation in unit.operations {
                switch operation {
                case .insert(let insert) where insert.id == request: isAfterInsert = true
                case .insert where operation.touches(row): return true
                case .delete, .deleteAll: if isAfterInsert, operation.touches(row) { return true }
                case .insert, .update: break
                }
            }
        }
        return false
    }

    /// Whether this store's changes not yet committed (pending or in flight) decide that a row
    /// exists: `true` when they insert it (and do not delete it after), `false` when they delete
    /// it, `nil` when whether it exists is the database's to say.
    func decidesExistence(of row: RowReference) -> Bool? {
        guard hasChanges else { return nil }
        var exists: Bool?
        forEachQueuedOperation(touching: row) { operation in
            switch operation {
            case .insert: exists = true
            case .delete, .deleteAll: exists = false
            case .update: break
            }
        }
        return exists
    }

    /// Whether the row is gone for this store: its delete has not committed yet, or has.
    func deletes(_ row: RowReference) -> Bool {
        decidesExistence(of: row) == false
    }

    /// The keys of a table that commits gave inserts the store has not applied yet: those rows
    /// are its inserts still known by their keys' placeholders.
    func keysAssignedAhead(table: Int) -> Set<SQLValue> {
        worker.keysAssignedAhead(table: table)
    }

    /// The keys of a table's rows that have changes not yet committed (pending or in flight),
    /// and whether deleting every row is among them: where the database's answer to a query
    /// may differ from the objects.
    func uncommittedRows(table: Int) -> (keys: Set<SQLValue>, deletesEveryRow: Bool) {
        var keys: Set<SQLValue> = []
        var deletesEveryRow = false
        guard hasChanges else { return (keys, deletesEveryRow) }
        func collect(_ unit: PendingChanges.Unit) {
            if unit.collectRows(of: table, into: &keys) { deletesEveryRow = true }
        }
        for batch in inFlight { batch.units.forEach(collect) }
        pending.all.forEach(collect)
        // A change of a row whose insert is in flight is that insert's row, which the
        // database has not shown yet.
        if keys.contains(where: { KeyPlaceholder.request(in: $0) != nil }) { keys = keys.filter { KeyPlaceholder.request(in: $0) == nil } }
        return (keys, deletesEveryRow)
    }

    /// Whether ``uncommittedRows(table:)`` finds a row or deletes every row, found without
    /// listing the rows.
    func hasUncommittedRows(table: Int) -> Bool {
        guard hasChanges else { return false }
        return inFlight.contains { $0.units.contains { $0.changesKeyedRows(of: table) } } || pending.all.contains { $0.changesKeyedRows(of: table) }
    }
}
