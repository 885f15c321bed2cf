/// What discarding pending units undoes, worked out from their operations by write-behind, as
/// a ``CommitReport`` is for a commit; the registrar shows it
/// (``ModelRegistrar/applyDiscarded(_:reading:)``).
struct DiscardedChanges {
    /// One thing to show, in the order the units' operations call for.
    enum Step {
        /// A row whose delete was discarded: it shows again (unless it is gone anyway).
        case restore(RowReference)
        /// An object whose insert was discarded: it is detached; `row` is the key it had
        /// claimed, where the database has a row of its own for it (nil for a key the
        /// database was to assign).
        case forgetInsert(any TrackedModel, row: RowReference?)

        /// The row the step may bring back.
        var row: RowReference? {
            switch self {
            case .restore(let row): row
            case .forgetInsert(_, let row): row
            }
        }
    }

    var steps: [Step] = []
    /// Rows whose updates were discarded, by table: their objects take the committed values.
    var reloads: [Int: [SQLValue]] = [:]
    /// What the discarded updates had shown of each row's cells: for a row no object shows,
    /// subscribers (live results among them) hear the cells go back from these.
    var shown: [RowReference: [Int: ShownCell]] = [:]

    /// What a discarded update had shown of a cell.
    enum ShownCell: Equatable {
        /// The value it set (and what it added to that since).
        case set(SQLValue)
        /// What it added to the value committed (or pending before it).
        case added(Int64)

        /// The value shown, given the value the cell shows now the update is gone (an
        /// increment applies as the write-behind applies it).
        func value(over current: SQLValue) -> SQLValue {
            switch self {
            case .set(let value): value
            case .added(let delta): CellWrite.add(delta).applied(to: current)
            }
        }

        /// Whether the update pointed a to-one at a new object (its key's placeholder).
        var holdsKeyPlaceholder: Bool {
            if case .set(let value) = self { KeyPlaceholder.request(in: value) != nil } else { false }
        }

        /// This cell, with a later write of the same update on top.
        func then(_ write: CellWrite) -> ShownCell {
            switch (self, write) {
            case (_, .set(let value)): .set(value)
            case (.set(let value), .add): .set(write.applied(to: value))
            case (.added(let total), .add(let delta)): .added(total &+ delta)
            }
        }
    }
    /// Tables whose `deleteAll` was discarded: their subscribers re-read.
    var resetTables: Set<Int> = []
    /// Rows of discarded inserts that subscribers were shown without the insert's object (the
    /// program deleted it, then discarded the delete; a read may have made another object of
    /// the row since), with the values shown: they hear the row go if nothing shows it now, or
    /// the cells that differ in the row that shows instead.
    var shownWithoutObject: [RowReference: [SQLValue]] = [:]

    /// - Parameters:
    ///   - shownBefore: The rows the units insert that showed before they were removed, with
    ///     the values they showed.
    ///   - insertedAgain: Whether a unit in flight or still pending inserts an object again
    ///     (the program related to it after it was deleted, say): it stays attached.
    init(_ units: [PendingChanges.Unit], shownBefore: [RowReference: [SQLValue]], insertedAgain: (any TrackedModel) -> Bool = { _ in false }) {
        // An object is forgotten once, by the first unit that inserted it: later units that
        // insert it again find it detached by then.
        var forgottenObjects: Set<ObjectIdentifier> = []
        // A row is shown again once, however many discarded units took it away (an insert
        // and a delete of it, say).
        var restored: Set<RowReference> = []
        func restore(_ row: RowReference) {
            if restored.insert(row).inserted { steps.append(.restore(row)) }
        }
        for unit in units {
            var insertedRows: Set<RowReference> = []
            var insertRequests: Set<UInt64> = []
            var deletedRows: [RowReference] = []
            for operation in unit.unit.operations {
                switch operation {
                case .update(let row, let cells):
                    reloads[row.table, default: []].append(row.key)
                    for cell in cells {
                        shown[row, default: [:]][cell.column] = (shown[row]?[cell.column] ?? .added(0)).then(cell.write)
                    }
                case .insert(let request):
                    if let row = request.row { insertedRows.insert(row) } else { insertRequests.insert(request.id) }
                case .delete(let row):
                    deletedRows.append(row)
                case .deleteAll(let table):
                    resetTables.insert(table)
                }
            }
            for row in deletedRows where !insertedRows.contains(row) && !resetTables.contains(row.table) {
                restore(row)
            }
            guard !insertedRows.isEmpty || !insertRequests.isEmpty else { continue }
            // One pass over the unit's objects: those it inserted are forgotten.
            var forgotten: Set<RowReference> = []
            for case let object as any TrackedModel in unit.objects {
                let tracking = object._$tracking
                guard tracking.isAttached, !forgottenObjects.contains(ObjectIdentifier(object)), !insertedAgain(object) else { continue }
                if let request = tracking.insertRequest, insertRequests.contains(request) {
                    steps.append(.forgetInsert(object, row: nil))
                    forgottenObjects.insert(ObjectIdentifier(object))
                } else if insertedRows.contains(RowReference(table: tracking.table, key: tracking.key)) {
                    let row = RowReference(table: tracking.table, key: tracking.key)
                    steps.append(.forgetInsert(object, row: row))
                    forgottenObjects.insert(ObjectIdentifier(object))
                    forgotten.insert(row)
                    // Its subscribers hear the row go back to what the file holds: once, from
                    // this object (not from what an earlier unit's insert of the key showed).
                    restored.insert(row)
                    shownWithoutObject[row] = nil
                }
            }
            // An inserted object the program deleted since: its delete went with the insert, so
            // another connection's row of that key, if any, shows again.
            // It is read back too: an object another read made of the row while only the
            // insert showed it goes with the row.
            for row in insertedRows.subtracting(forgotten) {
                restore(row)
                reloads[row.table, default: []].append(row.key)
                if let values = shownBefore[row] { shownWithoutObject[row] = values }
            }
        }
    }
}
