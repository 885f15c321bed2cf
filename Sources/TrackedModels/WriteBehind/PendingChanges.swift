/// Changes made but not yet handed to the writer, in program order, coalesced per row.
///
/// Writes to a row coalesce into that row's open update: a million assignments to one cell
/// leave one pending value. An insert or delete of a row closes its open update, so that a
/// later write becomes a new update after it and program order holds: no update resurrects a
/// deleted row, and none is lost because an insert or delete came after it.
struct PendingChanges {
    private enum Slot {
        case ready(WriteOperation)
        case openUpdate(RowReference)
    }

    /// A row's update that later writes still coalesce into, and where it stands in `slots`.
    private struct OpenUpdate {
        var slot: Int
        /// Changed cells in column order: a row has few columns, so a small sorted array beats
        /// a dictionary, and it becomes the write operation as it is.
        var cells: [(column: Int, write: CellWrite)] = []
    }

    private var slots: [Slot] = []
    private var openUpdates: [RowReference: OpenUpdate] = [:]
    /// Rows with an update that an insert or delete closed: only their cells need a scan.
    private var rowsWithClosedUpdates: Set<RowReference> = []

    var isEmpty: Bool { slots.isEmpty }
    /// Operations pending: one per inserted, updated or deleted row.
    var count: Int { slots.count }

    mutating func write(_ write: CellWrite, to cell: CellReference) {
        // One lookup of the row: this runs on every tracked write.
        let openRows = openUpdates.count
        Self.merge(write, into: &openUpdates[cell.row, default: OpenUpdate(slot: slots.count)].cells, column: cell.column)
        if openUpdates.count > openRows { slots.append(.openUpdate(cell.row)) }
    }

    private static func merge(_ write: CellWrite, into cells: inout [(column: Int, write: CellWrite)], column: Int) {
        if let index = cells.firstIndex(where: { $0.column >= column }) {
            if cells[index].column == column {
                cells[index].write = cells[index].write.followed(by: write)
            } else {
                cells.insert((column, write), at: index)
            }
        } else {
            cells.append((column, write))
        }
    }

    mutating func insert(_ request: InsertRequest) {
        if let row = request.row { close(row) }
        slots.append(.ready(.insert(request)))
    }

    mutating func delete(_ row: RowReference) {
        close(row)
        slots.append(.ready(.delete(row: row)))
    }

    mutating func deleteAll(table: Int) {
        for row in openUpdates.keys where row.table == table { close(row) }
        slots.append(.ready(.deleteAll(table: table)))
    }

    /// Stops coalescing into a row's open update: later writes go into a new update.
    private mutating func close(_ row: RowReference) {
        guard let open = openUpdates.removeValue(forKey: row) else { return }
        slots[open.slot] = .ready(.update(row: row, cells: open.cells))
        rowsWithClosedUpdates.insert(row)
    }

    /// The pending write of a cell, if any (merged over every pending update of its row).
    ///
    /// O(1) for a row whose only pending update is open, which is the common case; it runs for
    /// every committed counter and every cell another connection changed.
    func write(to cell: CellReference) -> CellWrite? {
        guard rowsWithClosedUpdates.contains(cell.row) else {
            return openUpdates[cell.row]?.cells.first { $0.column == cell.column }?.write
        }
        var merged: CellWrite?
        for slot in slots {
            let write: CellWrite?
            switch slot {
            case .openUpdate(let row) where row == cell.row:
                write = openUpdates[cell.row]?.cells.first { $0.column == cell.column }?.write
            case .ready(.update(let row, let cells)) where row == cell.row:
                write = cells.first { $0.column == cell.column }?.write
            default:
                write = nil
            }
            if let write { merged = merged.map { $0.followed(by: write) } ?? write }
        }
        return merged
    }

    /// Removes and returns every pending operation, in order.
    mutating func take() -> [WriteOperation] {
        let operations = slots.map { slot -> WriteOperation in
            switch slot {
            case .ready(let operation): operation
            case .openUpdate(let row): .update(row: row, cells: openUpdates[row]?.cells ?? [])
            }
        }
        slots.removeAll(keepingCapacity: true)
        openUpdates.removeAll(keepingCapacity: true)
        rowsWithClosedUpdates.removeAll(keepingCapacity: true)
        return operations
    }

    /// Puts operations that did not commit back in front of everything pending.
    ///
    /// Both are replayed in order, so a restored cell coalesces with a later write to it: a
    /// failed value that was overwritten since is not written again.
    mutating func restore(_ operations: [WriteOperation]) {
        let replay = operations + take()
        for operation in replay {
            switch operation {
            case .insert(let request):
                insert(request)
            case .update(let row, let cells):
                for cell in cells { write(cell.write, to: CellReference(row: row, column: cell.column)) }
            case .delete(let row):
                delete(row)
            case .deleteAll(let table):
                deleteAll(table: table)
            }
        }
    }

    /// Removes the inserts of the given requests (an insert that failed is withdrawn).
    mutating func withdrawInserts(_ requests: Set<UInt64>) {
        slots.removeAll { slot in
            if case .ready(.insert(let request)) = slot { requests.contains(request.id) } else { false }
        }
        for (index, slot) in slots.enumerated() {
            if case .openUpdate(let row) = slot { openUpdates[row]?.slot = index }
        }
    }

    /// A description of each pending operation, for inspection.
    func descriptions(tables: [TableSchema]) -> [String] {
        slots.map { slot in
            switch slot {
            case .ready(let operation): operation.description(tables: tables)
            case .openUpdate(let row):
                WriteOperation.update(row: row, cells: openUpdates[row]?.cells ?? []).description(tables: tables)
            }
        }
    }

}

extension WriteOperation {
    func description(tables: [TableSchema]) -> String {
        switch self {
        case .insert(let request):
            let schema = tables[request.table]
            let pairs = zip(schema.columns, request.values).map { "\($0.name) = \($1)" }
            return "insert into \(schema.name): \(pairs.joined(separator: ", "))"
        case .update(let row, let cells):
            let schema = tables[row.table]
            let pairs = cells.map { cell in
                switch cell.write {
                case .set(let value): "\(schema.columns[cell.column].name) = \(value)"
                case .add(let delta): "\(schema.columns[cell.column].name) += \(delta)"
                }
            }
            return "update \(schema.name) \(row.key): \(pairs.joined(separator: ", "))"
        case .delete(let row):
            return "delete from \(tables[row.table].name) \(row.key)"
        case .deleteAll(let table):
            return "delete every row from \(tables[table].name)"
        }
    }
}
