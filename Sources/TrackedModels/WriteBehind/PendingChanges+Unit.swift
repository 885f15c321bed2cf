extension PendingChanges {
    /// One unit of pending changes, which commits whole or not at all, with the objects it
    /// keeps alive until then and the error of its last refusal.
    struct Unit {
        let id: UInt64
        /// The unit's operations, except a one-row update's, which `updatedRow` and `cells`
        /// hold instead, so that the hot path merges into a plain array.
        private(set) var operations: [WriteOperation]
        /// The row of a one-row update, while the unit is one.
        private(set) var updatedRow: RowReference?
        /// A one-row update's changed cells, in column order.
        private var cells: [(column: Int, write: CellWrite)] = []
        /// For a transaction's unit: where each row's insert or update sits. Empty otherwise.
        var operationByRow: [RowReference: Int] = [:]
        let isTransaction: Bool
        /// The objects whose changes the unit holds, kept alive until it commits or is
        /// discarded (the identity map holds clean objects weakly).
        var objects: [AnyObject]
        /// Why the database rejected the unit, while it stays stuck.
        var rejection: Rejection?
        /// Whether a rejected unit has been written since, so that the next commit tries it
        /// again, not only the next `flush()`.
        var isRetryDue = false
        /// Where the unit's changes of rows that went away while it was rejected sit: they are
        /// not part of ``unit`` (a row of the same key made later is another row), only of what
        /// ``recorded`` describes.
        private var goneOperations: Set<Int> = []

        init(id: UInt64, operation: WriteOperation?, isTransaction: Bool, object: AnyObject?) {
            self.id = id
            self.isTransaction = isTransaction
            objects = object.map { [$0] } ?? []
            if !isTransaction, case .update(let row, let cells)? = operation {
                operations = []
                updatedRow = row
                self.cells = cells
            } else {
                operations = operation.map { [$0] } ?? []
            }
        }

        /// The unit as the worker takes it and reads lay it over the database: without its
        /// changes of rows gone while it was rejected.
        var unit: WriteUnit {
            let recorded = recorded
            guard !goneOperations.isEmpty else { return recorded }
            let kept = recorded.operations.indices.filter { !goneOperations.contains($0) }
            return WriteUnit(id: id, operations: kept.map { recorded.operations[$0] })
        }

        /// Every operation as the program made it, changes of rows since gone included: what
        /// ``ModelStore/pendingChanges`` describes.
        var recorded: WriteUnit {
            guard let updatedRow else { return WriteUnit(id: id, operations: operations) }
            return WriteUnit(id: id, operations: [.update(row: updatedRow, cells: cells)])
        }

        var operationCount: Int { updatedRow == nil ? operations.count : 1 }

        /// Adds the keys of the rows of `table` that the unit writes, read as the unit holds
        /// them (without building its operations); returns whether it deletes every row.
        func collectRows(of table: Int, into keys: inout Set<SQLValue>) -> Bool {
            if let updatedRow {
                if updatedRow.table == table { keys.insert(updatedRow.key) }
                return false
            }
            var deletesEveryRow = false
            for operation in operations where operation.table == table {
                if case .deleteAll = operation { deletesEveryRow = true }
                if let row = operation.row { keys.insert(row.key) }
            }
            return deletesEveryRow
        }

        /// Whether the unit writes a keyed row of the table, or every row of it: what
        /// ``collectRows(of:into:)`` finds, less the rows named by their keys' placeholders.
        func changesKeyedRows(of table: Int) -> Bool {
            func isKeyed(_ row: RowReference?) -> Bool { row.map { KeyPlaceholder.request(in: $0.key) == nil } ?? false }
            if let updatedRow { return updatedRow.table == table && isKeyed(updatedRow) }
            return operations.contains { operation in
                guard operation.table == table else { return false }
                if case .deleteAll = operation { return true }
                return isKeyed(operation.row)
            }
        }

        /// Puts the keys `keys` holds in place of their placeholders (see ``KeyPlaceholder``);
        /// returns the links that took one.
        ///
        /// A row given its key this way (changes made while its insert was in flight) is
        /// rekeyed: the caller indexes the units again.
        mutating func resolvePlaceholders(_ keys: [UInt64: SQLValue], linkColumns: [[Int]], rekeyed: inout Bool) -> [(link: DeferredLink, key: SQLValue)] {
            if let updatedRow {
                var update = WriteOperation.update(row: updatedRow, cells: cells)
                let resolved = update.resolvePlaceholders(keys, linkColumns: linkColumns, rekeyed: &rekeyed)
                if case .update(let row, let new) = update {
                    self.updatedRow = row
                    cells = new
                }
                return resolved
            }
            var resolved: [(link: DeferredLink, key: SQLValue)] = []
            var rowsRekeyed = false
            for index in operations.indices { resolved += operations[index].resolvePlaceholders(keys, linkColumns: linkColumns, rekeyed: &rowsRekeyed) }
            if rowsRekeyed {
                rekeyed = true
                if isTransaction { indexRows() }
            }
            return resolved
        }

        /// Merges a cell write into the row's insert or update; `false` if the unit has none.
        mutating func merge(_ write: CellWrite, to cell: CellReference) -> Bool {
            if updatedRow != nil {
                WriteOperation.merge(write, column: cell.column, into: &cells)
                return true
            }
            let index: Int
            if isTransaction {
                guard let found = operationByRow[cell.row] else { return false }
                index = found
            } else {
                index = 0
            }
            return operations[index].merge(write, column: cell.column)
        }

        /// Merges a cell write into the unit's one-row update of that row; `false` if it is none.
        mutating func mergeUpdate(_ write: CellWrite, to cell: CellReference) -> Bool {
            guard updatedRow == cell.row else { return false }
            WriteOperation.merge(write, column: cell.column, into: &cells)
            return true
        }

        /// Merges into the insert with this request id; `false` if the unit has none.
        mutating func merge(_ write: CellWrite, column: Int, intoInsert request: UInt64) -> Bool {
            for (position, operation) in operations.enumerated() {
                guard case .insert(let insert) = operation, insert.id == request else { continue }
                return operations[position].merge(write, column: column)
            }
            return false
        }

        /// Removes the unit's updates and deletes of a row (those before position `end`, if
        /// given); whether it had any.
        mutating func dropChanges(of row: RowReference, before end: Int? = nil) -> Bool {
            if updatedRow != nil {
                guard updatedRow == row else { return false }
                updatedRow = nil
                cells = []
                return true
            }
            let count = operations.count
            var kept: [WriteOperation] = []
            for (position, operation) in operations.enumerated() {
                let isDropped = switch operation {
                case .update(row, _), .delete(row): position < (end ?? .max)
                default: false
                }
                if !isDropped { kept.append(operation) }
            }
            operations = kept
            guard operations.count != count else { return false }
            if isTransaction { indexRows() }
            return true
        }

        /// Sets aside a rejected unit's updates and deletes of a row that went away (another
        /// connection deleted it or changed its key, or its insert was discarded), those before
        /// the unit's own insert of the row, and marks the unit rejected for good: trying again
        /// could only change another row of that key. Returns whether it had any.
        mutating func setAsideChanges(ofGone row: RowReference) -> Bool {
            let operations = recorded.operations
            let end = operations.firstIndex { $0.inserts(row) } ?? operations.count
            let gone = operations[..<end].indices.filter { position in
                switch operations[position] {
                case .update(row, _), .delete(row): !goneOperations.contains(position)
                default: false
                }
            }
            guard let first = gone.first else { return false }
            goneOperations.formUnion(gone)
            if rejection?.isForGood != true {
                let error = StoreError(
                    code: .rowNotFound,
                    message: "row \(row.key) is no longer in the database (another connection deleted it or changed its key, or its insert was discarded), so this change to it cannot be stored"
                )
                rejection = Rejection(error: error, operation: first)
            }
            if isTransaction { indexRows() }
            return true
        }

        /// Rebuilds a transaction unit's ``operationByRow`` from its operations.
        mutating func indexRows() {
            operationByRow = Dictionary(
                operations.enumerated().compactMap { position, operation in
                    if case .delete = operation { return nil }
                    if goneOperations.contains(position) { return nil }
                    return operation.row.map { ($0, position) }
                },
                uniquingKeysWith: { _, last in last }
            )
        }

        mutating func append(_ operation: WriteOperation) {
            precondition(updatedRow == nil, "only a transaction's unit takes more operations")
            operations.append(operation)
        }

        /// The unit's write to a cell, merged over its operations.
        func write(to cell: CellReference) -> CellWrite? {
            var merged: CellWrite?
            for operation in unit.operations {
                let write: CellWrite?
                switch operation {
                case .insert(let request) where request.row == cell.row: write = .set(request.values[cell.column])
                case .update(let row, let cells) where row == cell.row: write = cells.first { $0.column == cell.column }?.write
                default: write = nil
                }
                if let write { merged = merged.map { $0.followed(by: write) } ?? write }
            }
            return merged
        }
    }
}
