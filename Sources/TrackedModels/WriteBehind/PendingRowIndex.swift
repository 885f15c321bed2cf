/// ``PendingChanges``' one index per row, kept as its units change: where a write to the row
/// goes, and whether reading one of its cells must merge several units.
///
/// A row's entry names its open unit (the unit a write to the row merges into), the unit behind
/// a rejected open unit that takes writes to the cells the rejected one does not write, and
/// whether more than one unit writes the row. A row with none of these has no entry.
///
/// ```swift
/// var rows = PendingRowIndex()
/// rows.open(row, at: 0)     // unit 0 takes the row's writes
/// rows.close(row)           // an insert or delete of the row: its next write opens a new unit
/// rows.entry(row)           // Entry(open: nil, behindRejection: nil, isInSeveralUnits: true)
/// ```
struct PendingRowIndex {
    struct Entry {
        /// The unit a write to the row merges into.
        var open: Int?
        /// For a row whose open unit was rejected: the unit behind it that takes writes to
        /// cells the rejected unit does not write.
        var behindRejection: Int?
        /// Whether more than one pending unit writes the row: only its lookups scan every unit.
        var isInSeveralUnits = false

        fileprivate var isEmpty: Bool { open == nil && behindRejection == nil && !isInSeveralUnits }
    }

    private var entries: [RowReference: Entry] = [:]

    /// What the index holds of a row (an empty entry where it holds nothing).
    func entry(_ row: RowReference) -> Entry {
        entries[row] ?? Entry()
    }

    /// The row's entry, or nil where it had none: then unit `index` is the row's open unit now.
    /// One lookup, for a row's first write since the units were handed over.
    mutating func entry(_ row: RowReference, openingAt index: Int) -> Entry? {
        func claim(_ entry: inout Entry) -> Entry? {
            guard entry.isEmpty else { return entry }
            entry.open = index
            return nil
        }
        return claim(&entries[row, default: Entry()])
    }

    func open(_ row: RowReference) -> Int? {
        entries[row]?.open
    }

    /// Every row's entry, for checking the index against the units.
    var all: [RowReference: Entry] { entries }

    /// The rows of a table that have an open unit.
    func rowsWithOpenUnit(of table: Int) -> [RowReference] {
        entries.compactMap { row, entry in row.table == table && entry.open != nil ? row : nil }
    }

    /// Makes a new unit the row's open unit; a row that had one is written by several units now.
    mutating func open(_ row: RowReference, at index: Int) {
        update(row) { entry in
            if entry.open != nil { entry.isInSeveralUnits = true }
            entry.open = index
        }
    }

    mutating func setBehindRejection(_ row: RowReference, _ index: Int?) {
        update(row) { $0.behindRejection = index }
    }

    mutating func markInSeveralUnits(_ row: RowReference) {
        update(row) { $0.isInSeveralUnits = true }
    }

    /// Stops coalescing into the row's open unit: its next write goes into a new unit, so a row
    /// that had an open unit is written by several units.
    mutating func close(_ row: RowReference) {
        update(row) { entry in
            if entry.open != nil { entry.isInSeveralUnits = true }
            entry.open = nil
            entry.behindRejection = nil
        }
    }

    /// Forgets the row's open unit and the one behind it, as the units are indexed anew.
    mutating func forgetUnits(of row: RowReference) {
        update(row) { entry in
            entry.open = nil
            entry.behindRejection = nil
        }
    }

    /// Forgets the open units of a table's rows (and those behind them): a unit deletes every
    /// row of the table.
    mutating func forgetOpenUnits(of table: Int) {
        for row in entries.keys where row.table == table { forgetUnits(of: row) }
    }

    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
    }

    /// Changes a row's entry in place, dropping it once it holds nothing.
    mutating func update(_ row: RowReference, _ change: (inout Entry) -> Void) {
        guard let index = entries.index(forKey: row) else {
            var entry = Entry()
            change(&entry)
            if !entry.isEmpty { entries[row] = entry }
            return
        }
        change(&entries.values[index])
        if entries.values[index].isEmpty { entries.remove(at: index) }
    }
}
