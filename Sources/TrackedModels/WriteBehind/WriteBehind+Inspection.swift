/// What write-behind shows of its changes (``WriteBehind/pendingChanges``) and which of its
/// objects a pending insert holds.
extension WriteBehind {
    /// The changes not yet committed, in the order they will commit.
    var pendingChanges: [PendingChange] {
        inFlight.flatMap(\.units).map { change($0, isInFlight: true) } + pending.all.map { change($0, isInFlight: false) }
    }

    /// Whether a unit not yet committed (in flight or pending) inserts this object (as the row
    /// it is attached to now) and no later one deletes that row again.
    func isInsertUncommitted(_ object: any TrackedModel) -> Bool {
        let tracking = object._$tracking
        let row = RowReference(table: tracking.table, key: tracking.key)
        var inserted = false
        for unit in inFlight.flatMap(\.units) + pending.all {
            let holdsObject = unit.objects.contains { $0 === object }
            for operation in unit.unit.operations {
                switch operation {
                case .insert(let request):
                    if holdsObject, tracking.insertRequest.map({ $0 == request.id }) ?? (request.row == row) { inserted = true }
                case .delete, .deleteAll:
                    if operation.touches(row) { inserted = false }
                case .update:
                    break
                }
            }
        }
        return inserted
    }

    private func change(_ unit: PendingChanges.Unit, isInFlight: Bool) -> PendingChange {
        PendingChange(
            id: unit.id,
            operations: unit.recorded.operations.map { $0.description(tables: schemas) },
            isInFlight: isInFlight,
            error: unit.rejection.map { _ in rejectionError(unit, among: 1) }
        )
    }

    /// The error of a rejected unit: what it writes (table, row, columns, value types) and why
    /// the database refused it.
    func rejectionError(_ unit: PendingChanges.Unit, among count: Int) -> StoreError {
        let rejection = unit.rejection!
        let operations = unit.recorded.operations
        let operation = operations[min(rejection.operation, operations.count - 1)]
        let others = count > 1 ? " (and \(count - 1) other change\(count == 2 ? "" : "s"))" : ""
        let discard = "discard the change (store.discard(_:) with an entry of store.pendingChanges)"
        return StoreError(
            code: .changeRejected,
            message: "the database refused to \(operation.description(tables: schemas, showingTypes: true))\(others): \(rejection.error.message); "
                + (rejection.isForGood ? "trying again cannot help: \(discard)" : "assign a valid value, or \(discard)"),
            constraint: rejection.error.constraint,
            underlying: rejection.error
        )
    }
}
