/// The overlay rule: what a cell shows when the database reports a committed value for it,
/// given this store's changes in flight and pending.
extension WriteBehind {
    /// What a cell shows when the database reports `committed` for it: the committed value plus
    /// this store's increments still in flight or pending; `nil` to keep the local value,
    /// because a plain assignment not yet committed will overwrite it (last writer wins).
    func overlay(_ committed: SQLValue, for cell: CellReference) -> SQLValue? {
        var delta: Int64 = 0
        if let inFlight = cellsInFlight()[cell] {
            guard inFlight.sets == 0 else { return nil }
            delta = inFlight.delta
        }
        switch pending.write(to: cell) {
        case nil: break
        case .add(let pending)?: delta &+= pending
        case .set?: return nil
        }
        guard delta != 0, case .integer(let value) = committed else { return committed }
        return .integer(value &+ delta)
    }

    private func cellsInFlight() -> [CellReference: (delta: Int64, sets: Int)] {
        if let cached = cellsInFlightCache { return cached }
        var cells: [CellReference: (delta: Int64, sets: Int)] = [:]
        for unit in inFlight.lazy.flatMap(\.units) {
            for operation in unit.unit.operations {
                switch operation {
                case .update(let row, let writes):
                    for cell in writes {
                        let reference = CellReference(row: row, column: cell.column)
                        switch cell.write {
                        case .add(let delta): cells[reference, default: (0, 0)].delta &+= delta
                        case .set: cells[reference, default: (0, 0)].sets += 1
                        }
                    }
                case .insert(let request):
                    guard let row = request.row else { continue }
                    for column in request.values.indices { cells[CellReference(row: row, column: column), default: (0, 0)].sets += 1 }
                case .delete, .deleteAll:
                    continue
                }
            }
        }
        cellsInFlightCache = cells
        return cells
    }
}
