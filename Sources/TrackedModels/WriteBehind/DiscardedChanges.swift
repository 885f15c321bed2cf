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
    /// Tables whose `deleteAll` was discarded: their subscribers re-read.
    var resetTables: Set<Int> = []

    init(_ units: [PendingChanges.Unit]) {
        // An object is forgotten once, by the first unit that inserted it: later units that
        // insert it again find it detached by then.
        var forgottenObjects: Set<ObjectIdentifier> = []
        for unit in units {
            var insertedRows: Set<RowReference> = []
            var insertRequests: Set<UInt64> = []
            var deletedRows: [RowReference] = []
            for operation in unit.unit.operations {
                switch operation {
                case .update(let row, _):
                    reloads[row.table, default: []].append(row.key)
                case .insert(let request):
                    if let row = request.row { insertedRows.insert(row) } else { insertRequests.insert(request.id) }
                case .delete(let row):
                    deletedRows.append(row)
                case .deleteAll(let table):
                    resetTables.insert(table)
                }
            }
            for row in deletedRows where !insertedRows.contains(row) && !resetTables.contains(row.table) {
                steps.append(.restore(row))
            }
            guard !insertedRows.isEmpty || !insertRequests.isEmpty else { continue }
            // One pass over the unit's objects: those it inserted are forgotten.
            var forgotten: Set<RowReference> = []
            for case let object as any TrackedModel in unit.objects {
                let tracking = object._$tracking
                guard tracking.isAttached, !forgottenObjects.contains(ObjectIdentifier(object)) else { continue }
                if let request = tracking.insertRequest, insertRequests.contains(request) {
                    steps.append(.forgetInsert(object, row: nil))
                    forgottenObjects.insert(ObjectIdentifier(object))
                } else if insertedRows.contains(RowReference(table: tracking.table, key: tracking.key)) {
                    let row = RowReference(table: tracking.table, key: tracking.key)
                    steps.append(.forgetInsert(object, row: row))
                    forgottenObjects.insert(ObjectIdentifier(object))
                    forgotten.insert(row)
                }
            }
            // An inserted object the program deleted since: its delete went with the insert, so
            // another connection's row of that key, if any, shows again.
            for row in insertedRows.subtracting(forgotten) { steps.append(.restore(row)) }
        }
    }
}
