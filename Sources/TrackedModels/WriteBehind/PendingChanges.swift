/// Changes made and not yet handed to the worker: atomic units in program order.
///
/// Outside a transaction, each row's changes coalesce into that row's open unit: a million
/// assignments to one cell leave one pending value. A transaction's changes coalesce into its
/// own unit, which closes when the transaction ends, so nothing written later joins it. An
/// insert or delete closes the row's open unit, so that program order holds: no update
/// resurrects a deleted row, and none is lost because an insert or delete came after it.
///
/// A unit the database rejected stays here, in place, with its error. Assigning a cell it
/// writes replaces the refused value (and it is tried again); other writes to its rows go into
/// a unit behind it, which waits for it.
struct PendingChanges {
    /// Where a row's open unit was, so that the next write to the row skips the lookup. Valid
    /// while ``PendingChanges/generation`` has not moved on.
    struct UnitHint {
        var generation: UInt64 = .max
        var index = 0
    }

    /// A unit the database refused, and which of its operations it refused.
    struct Rejection {
        var error: StoreError
        var operation: Int

        /// Whether trying again cannot help: the row the unit changes is gone, and a row of
        /// the same key made later is another row. Such a unit waits to be discarded.
        var isForGood: Bool { error.code == .rowNotFound }
    }

    private var units: [Unit] = []
    /// Where each row's writes go, and whether several units write it.
    private var rows = PendingRowIndex()
    /// The unit of the open transaction, if one is open: the last unit.
    private var transactionUnit: Int?
    private var lastUnitID: UInt64 = 0
    /// Moves on whenever a row's open unit may change other than by a write to that row (a
    /// unit closed, units handed over, put back, removed or rejected), which invalidates every
    /// ``UnitHint``.
    private var generation: UInt64 = 0
    /// Operations pending: about one per inserted, updated or deleted row.
    private(set) var operationCount = 0

    var isEmpty: Bool { units.isEmpty }
    var isInTransaction: Bool { transactionUnit != nil }

    // MARK: - Recording (the hot path)

    /// Records a write to a cell of a keyed row.
    ///
    /// - Parameter hint: Where the row's last write went; updated when the write lands in the
    ///   row's open unit.
    mutating func write(_ write: CellWrite, to cell: CellReference, of object: AnyObject, hint: inout UnitHint) {
        if hint.generation == generation, transactionUnit == nil, units[hint.index].mergeUpdate(write, to: cell) { return }
        if let index = transactionUnit {
            if !units[index].merge(write, to: cell) {
                if rows.open(cell.row) != nil { rows.markInSeveralUnits(cell.row) }
                append(.update(row: cell.row, cells: [(cell.column, write)]), of: object, toTransaction: index)
            }
            return
        }
        guard let entry = rows.entry(cell.row, openingAt: units.count) else {
            appendUnit(.update(row: cell.row, cells: [(cell.column, write)]), object: object, opensRow: nil)
            hint = UnitHint(generation: generation, index: units.count - 1)
            return
        }
        if let index = entry.open {
            if units[index].rejection == nil {
                if units[index].merge(write, to: cell) {
                    hint = UnitHint(generation: generation, index: index)
                    return
                }
            } else {
                // Assigning a cell that the rejected unit wrote last replaces the refused value:
                // the unit is tried again at the next commit, and keeps its error until then.
                let isWrittenLater = units[(index + 1)...].contains { $0.write(to: cell) != nil }
                if !isWrittenLater, units[index].write(to: cell) != nil, units[index].merge(write, to: cell) {
                    units[index].isRetryDue = true
                    return
                }
                if let behind = entry.behindRejection, units[behind].merge(write, to: cell) { return }
                appendUnit(.update(row: cell.row, cells: [(cell.column, write)]), object: object, opensRow: nil)
                rows.setBehindRejection(cell.row, units.count - 1)
                rows.markInSeveralUnits(cell.row)
                return
            }
        }
        appendUnit(.update(row: cell.row, cells: [(cell.column, write)]), object: object, opensRow: cell.row)
        hint = UnitHint(generation: generation, index: units.count - 1)
    }

    mutating func insert(_ request: InsertRequest, of object: AnyObject) {
        if let index = transactionUnit {
            append(.insert(request), of: object, toTransaction: index)
            return
        }
        if let row = request.row { close(row) }
        appendUnit(.insert(request), object: object, opensRow: request.row)
    }

    /// Writes to an object whose key the database has not assigned yet go into its insert while
    /// that is pending; `false` once it is in flight, or where a change made while it was (by
    /// its key's placeholder) wrote the cell after it: the write must follow that change.
    ///
    /// Like an assignment to a refused unit's cell, one that goes into a refused insert
    /// replaces the refused value, and the insert is tried again at the next commit.
    mutating func write(_ write: CellWrite, column: Int, ofInsert request: UInt64, table: Int) -> Bool {
        guard let index = units.lastIndex(where: { unit in
            unit.unit.operations.contains { if case .insert(let insert) = $0 { insert.id == request } else { false } }
        }) else { return false }
        let cell = CellReference(row: RowReference(table: table, key: KeyPlaceholder.value(forInsert: request)), column: column)
        if units[(index + 1)...].contains(where: { $0.write(to: cell) != nil }) { return false }
        guard units[index].merge(write, column: column, intoInsert: request) else { return false }
        if units[index].rejection != nil { units[index].isRetryDue = true }
        return true
    }

    mutating func delete(_ row: RowReference, of object: AnyObject) {
        if let index = transactionUnit {
            append(.delete(row: row), of: object, toTransaction: index)
            units[index].operationByRow.removeValue(forKey: row)
            return
        }
        close(row)
        appendUnit(.delete(row: row), object: object, opensRow: nil)
        // The delete closes the row: its next change is a unit of its own.
        rows.markInSeveralUnits(row)
    }

    mutating func deleteAll(table: Int) {
        if let index = transactionUnit {
            units[index].append(.deleteAll(table: table))
            units[index].operationByRow = units[index].operationByRow.filter { $0.key.table != table }
            operationCount += 1
            return
        }
        for row in rows.rowsWithOpenUnit(of: table) { close(row) }
        appendUnit(.deleteAll(table: table), object: nil, opensRow: nil)
    }

    private mutating func appendUnit(_ operation: WriteOperation, object: AnyObject?, opensRow row: RowReference?) {
        lastUnitID += 1
        units.append(Unit(id: lastUnitID, operation: operation, isTransaction: false, object: object))
        operationCount += 1
        if let row { rows.open(row, at: units.count - 1) }
    }

    private mutating func append(_ operation: WriteOperation, of object: AnyObject, toTransaction index: Int) {
        switch operation {
        case .insert, .update:
            if let row = operation.row { units[index].operationByRow[row] = units[index].operationCount }
        case .delete, .deleteAll:
            break
        }
        units[index].append(operation)
        units[index].objects.append(object)
        operationCount += 1
    }

    /// Stops coalescing into a row's open unit: later writes go into a new unit after it.
    private mutating func close(_ row: RowReference) {
        generation &+= 1
        rows.close(row)
    }

    // MARK: - Transactions

    /// Starts the unit of an outermost transaction: every change until it ends goes into it.
    mutating func beginTransaction() {
        precondition(transactionUnit == nil, "a transaction's unit is already open")
        lastUnitID += 1
        units.append(Unit(id: lastUnitID, operation: nil, isTransaction: true, object: nil))
        transactionUnit = units.count - 1
    }

    /// The transaction's unit as it is now, to go back to if a nested level fails.
    func transactionSnapshot() -> Unit? {
        transactionUnit.map { units[$0] }
    }

    /// Goes back to a snapshot of the transaction's unit, dropping what a nested level wrote.
    mutating func restoreTransaction(to snapshot: Unit) {
        guard let index = transactionUnit else { return }
        operationCount -= units[index].operationCount - snapshot.operationCount
        units[index] = snapshot
    }

    /// Ends the outermost transaction: its unit stays pending, closed to later writes, or is
    /// dropped when the transaction failed or wrote nothing.
    mutating func endTransaction(keeping: Bool) {
        guard let index = transactionUnit else { return }
        transactionUnit = nil
        let unit = units[index]
        if !keeping || unit.operationCount == 0 {
            operationCount -= unit.operationCount
            units.removeLast()
            return
        }
        for operation in unit.unit.operations {
            switch operation {
            case .deleteAll(let table):
                for row in rows.rowsWithOpenUnit(of: table) { close(row) }
            case .delete(let row):
                close(row)
                rows.markInSeveralUnits(row)
            case .insert, .update:
                guard let row = operation.row else { continue }
                closeBehind(row)
                rows.markInSeveralUnits(row)
            }
        }
    }

    /// Closes a row's open unit at a transaction that wrote the row; a rejected one stays open
    /// for the cells it still writes last (the unit behind it closes: later writes go after the
    /// transaction).
    private mutating func closeBehind(_ row: RowReference) {
        guard let open = rows.open(row), units[open].rejection != nil else {
            close(row)
            return
        }
        generation &+= 1
        rows.setBehindRejection(row, nil)
    }

    // MARK: - Reading

    /// The pending write of a cell, if any, merged over every pending unit of its row.
    ///
    /// O(1) for a row with one pending unit, the common case; it runs for every committed
    /// counter and every cell another connection changed.
    func write(to cell: CellReference) -> CellWrite? {
        let entry = rows.entry(cell.row)
        guard entry.isInSeveralUnits else {
            var merged = entry.open.flatMap { units[$0].write(to: cell) }
            if let index = transactionUnit, let write = units[index].write(to: cell) {
                merged = merged.map { $0.followed(by: write) } ?? write
            }
            return merged
        }
        var merged: CellWrite?
        for unit in units {
            if let write = unit.write(to: cell) { merged = merged.map { $0.followed(by: write) } ?? write }
        }
        return merged
    }

    /// The units, in order, for inspection.
    var all: [Unit] { units }

    // MARK: - Handing over

    /// Removes and returns the units that may commit now, in order.
    ///
    /// A rejected unit stays, unless `retryingRejected`; so does every later unit that touches
    /// its rows, or the rows of a unit that stays, so that changes to a row commit in program
    /// order.
    /// A unit that links to a row a staying unit inserts without a key (``KeyPlaceholder``)
    /// stays too, whichever comes first.
    mutating func takeReady(retryingRejected: Bool, linkColumns: [[Int]]) -> [Unit] {
        precondition(transactionUnit == nil, "units are handed over only between transactions")
        guard !units.isEmpty else { return [] }
        // Nothing refused: every unit goes, handed over whole instead of copied one by one.
        if !units.contains(where: { $0.rejection != nil }) { return removeAll() }
        var linked: Set<UInt64> = []
        while true {
            var ready: [Unit] = []
            var staying: [Unit] = []
            for unit in units {
                let isRejected = unit.rejection.map { $0.isForGood || !(retryingRejected || unit.isRetryDue) } ?? false
                if isRejected || linked.contains(unit.id) || staying.contains(where: { $0.unit.overlaps(unit.unit) }) {
                    staying.append(unit)
                } else {
                    ready.append(unit)
                }
            }
            let inserting = staying.filter(\.unit.insertsWithoutKey)
            let late = inserting.isEmpty ? [] : ready.filter { unit in
                inserting.contains { unit.unit.references(insertsOf: $0.unit, linkColumns: linkColumns) }
            }
            guard late.isEmpty else {
                linked.formUnion(late.map(\.id))
                continue
            }
            units = staying
            reindex()
            return ready
        }
    }

    /// Puts the keys `keys` holds in place of their placeholders in every unit; returns the
    /// links that took one.
    mutating func resolvePlaceholders(_ keys: [UInt64: SQLValue], linkColumns: [[Int]]) -> [(link: DeferredLink, key: SQLValue)] {
        var resolved: [(link: DeferredLink, key: SQLValue)] = []
        var rekeyed = false
        for index in units.indices { resolved += units[index].resolvePlaceholders(keys, linkColumns: linkColumns, rekeyed: &rekeyed) }
        if rekeyed { reindex() }
        return resolved
    }

    /// Puts units that did not commit back among those pending, in program order: before the
    /// units made after them, after the ones (refused, say) that stayed while they were away.
    mutating func restore(_ returned: [Unit]) {
        guard !returned.isEmpty else { return }
        precondition(transactionUnit == nil, "units are handed back only between transactions")
        var merged: [Unit] = []
        merged.reserveCapacity(returned.count + units.count)
        var back = returned[...]
        for unit in units {
            while let first = back.first, first.id < unit.id {
                merged.append(first)
                back = back.dropFirst()
            }
            merged.append(unit)
        }
        units = merged + back
        reindex()
    }

    /// Removes the unit with this id, returning it, and the updates and deletes of rows it
    /// inserted that later units hold: they were made to the objects it inserted.
    mutating func remove(unit id: UInt64) -> Unit? {
        guard transactionUnit == nil, let index = units.firstIndex(where: { $0.id == id }) else { return nil }
        let removed = units.remove(at: index)
        for case .insert(let request) in removed.unit.operations {
            dropChanges(of: request.row ?? RowReference(table: request.table, key: KeyPlaceholder.value(forInsert: request.id)), from: index)
        }
        reindex()
        return removed
    }

    /// Drops the pending updates and deletes of a row that another connection deleted (or gave
    /// another key), or whose insert the program discarded. A rejected unit's stay for the
    /// program to discard, set aside (see ``Unit/setAsideChanges(ofGone:)``): they were made to
    /// a row that is gone, and a later row of the same key (one SQLite gives an insert of this
    /// store's, say) is another row. A unit left with nothing to do goes.
    mutating func dropChanges(of row: RowReference, from start: Int = 0) {
        guard transactionUnit == nil else { return }
        var changed = false
        for index in units.indices where index >= start {
            // What follows the program's own insert of the row is for that row: it stays.
            let inserts = units[index].unit.operations.firstIndex { $0.inserts(row) }
            if units[index].rejection == nil {
                changed = units[index].dropChanges(of: row, before: inserts) || changed
            } else {
                changed = units[index].setAsideChanges(ofGone: row) || changed
            }
            if inserts != nil { break }
        }
        guard changed else { return }
        units.removeAll { $0.operationCount == 0 }
        reindex()
    }

    /// Removes every unit, returning them.
    mutating func removeAll() -> [Unit] {
        precondition(transactionUnit == nil, "pending changes cannot be dropped inside a transaction")
        defer {
            units.removeAll()
            reindex()
        }
        return units
    }

    /// Checks the lookups against the units; for tests. Each row's open unit writes the row and,
    /// unless it was rejected, no unit after it does (but the open transaction); every row that
    /// several units write is known as such, so that reading a cell merges them all.
    func checkInvariants() {
        precondition(operationCount == units.reduce(0) { $0 + $1.operationCount }, "operation count \(operationCount) is off")
        if let transactionUnit { precondition(transactionUnit == units.count - 1 && units[transactionUnit].isTransaction, "the open transaction is not the last unit") }
        for (index, unit) in units.enumerated() where index != transactionUnit {
            precondition(unit.operationCount > 0, "unit \(unit.id) is empty")
        }
        var unitsByRow: [RowReference: [Int]] = [:]
        for (index, unit) in units.enumerated() {
            for row in Set(unit.unit.operations.compactMap(\.row)) { unitsByRow[row, default: []].append(index) }
        }
        for (row, indices) in unitsByRow where indices.count > 1 {
            precondition(rows.entry(row).isInSeveralUnits, "row \(row.key) is written by \(indices.count) units but not known to be")
        }
        for (row, entry) in rows.all {
            guard let open = entry.open else {
                precondition(entry.behindRejection == nil, "row \(row.key) has a unit behind a rejection but no open unit")
                continue
            }
            precondition(units.indices.contains(open) && units[open].unit.operations.contains { $0.row == row }, "row \(row.key)'s open unit does not write it")
            // A rejected open unit takes only the cells it writes last; later units may write
            // the row.
            if let behind = entry.behindRejection {
                precondition(units[open].rejection != nil && behind > open, "row \(row.key)'s unit behind a rejection is misplaced")
            }
            guard units[open].rejection == nil else { continue }
            for later in unitsByRow[row, default: []] where later > open && later != transactionUnit {
                preconditionFailure("row \(row.key) is written by unit \(units[later].id) after its open unit \(units[open].id)")
            }
        }
    }

    /// Rebuilds the lookups after units were removed or put back: each row's open unit is the
    /// last unit that writes it, if that is a one-row insert or update, or a rejected unit.
    private mutating func reindex() {
        generation &+= 1
        rows.removeAll()
        operationCount = 0
        var seen: Set<RowReference> = []
        let isRejected = units.map { $0.rejection != nil }
        for (index, unit) in units.enumerated() {
            operationCount += unit.operationCount
            let isOpen = unit.rejection != nil || !unit.isTransaction
            for operation in unit.unit.operations {
                switch operation {
                case .deleteAll(let table):
                    rows.forgetOpenUnits(of: table)
                case .delete(let row):
                    if !seen.insert(row).inserted { rows.markInSeveralUnits(row) }
                    rows.forgetUnits(of: row)
                case .insert, .update:
                    guard let row = operation.row else { continue }
                    let isSeenAgain = !seen.insert(row).inserted
                    rows.update(row) { entry in
                        if isSeenAgain, entry.open != index { entry.isInSeveralUnits = true }
                        if let open = entry.open, open != index, isRejected[open], !isRejected[index] {
                            // A rejected unit stays the row's open unit for the cells it writes
                            // last; an open unit behind it takes other cells, and a transaction
                            // closes that.
                            entry.behindRejection = isOpen ? index : nil
                        } else {
                            entry.open = isOpen ? index : nil
                            entry.behindRejection = nil
                        }
                    }
                }
            }
            if unit.rejection != nil, unit.isTransaction { units[index].indexRows() }
        }
        // A row that a closed unit writes gets a new unit at its next write.
        for row in seen where rows.open(row) == nil { rows.markInSeveralUnits(row) }
    }
}
