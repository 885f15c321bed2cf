/// A row, by its table's position in the store and its primary key.
struct RowReference: Hashable, Sendable {
    var table: Int
    var key: SQLValue
}

/// One cell, by row and column position.
struct CellReference: Hashable, Sendable {
    var row: RowReference
    var column: Int
}

/// What a pending update does to one cell.
enum CellWrite: Sendable, Equatable {
    /// Stores a value (last writer wins).
    case set(SQLValue)
    /// Adds to the stored integer (`column = column + delta`), so that concurrent writers add up.
    case add(Int64)

    /// This write followed by `next`, as one write.
    func followed(by next: CellWrite) -> CellWrite {
        switch (self, next) {
        case (.add(let first), .add(let second)): .add(first &+ second)
        case (.set(.integer(let value)), .add(let delta)): .set(.integer(value &+ delta))
        case (_, .set), (.set, .add): next
        }
    }

    /// The value this write leaves in a cell that held `value`.
    func applied(to value: SQLValue) -> SQLValue {
        switch (self, value) {
        case (.set(let new), _): new
        case (.add(let delta), .integer(let old)): .integer(old &+ delta)
        case (.add(let delta), _): .integer(delta)
        }
    }
}

/// A row to insert.
struct InsertRequest: Sendable {
    var table: Int
    /// The values, in the table's column order.
    var values: [SQLValue]
    /// The row, or `nil` when the database assigns the primary key (reported back under `id`).
    var row: RowReference?
    var id: UInt64
}

/// One change the worker applies, in program order.
enum WriteOperation: Sendable {
    case insert(InsertRequest)
    /// Writes changed cells of one row, in column order.
    case update(row: RowReference, cells: [(column: Int, write: CellWrite)])
    case delete(row: RowReference)
    /// Deletes every row of a table.
    case deleteAll(table: Int)

    /// The row the operation writes, if it writes one (an insert whose key the database assigns
    /// has none yet).
    var row: RowReference? {
        switch self {
        case .insert(let request): request.row
        case .update(let row, _), .delete(let row): row
        case .deleteAll: nil
        }
    }

    /// Whether the operation inserts `row` (with its key).
    func inserts(_ row: RowReference) -> Bool {
        if case .insert(let request) = self { request.row == row } else { false }
    }

    /// Whether the operation writes `row`, or every row of its table.
    func touches(_ row: RowReference) -> Bool {
        if case .deleteAll(let table) = self { return table == row.table }
        return self.row == row
    }
}

/// Changes that commit together or not at all: one row's change made outside a transaction, or
/// everything one `store.transaction { }` wrote.
///
/// A unit is never split across batches, retries or flushes. When a unit fails for good (a
/// CHECK, NOT NULL or foreign-key violation, a NaN), it alone stays behind; units that touch
/// other rows still commit.
struct WriteUnit: Sendable {
    let id: UInt64
    var operations: [WriteOperation]

    /// Whether any operation writes `row` (or every row of its table).
    func touches(_ row: RowReference) -> Bool {
        operations.contains { $0.touches(row) }
    }

    /// Whether this unit and `other` write a common row or table, so that their order matters.
    func overlaps(_ other: WriteUnit) -> Bool {
        for operation in operations {
            switch operation {
            case .deleteAll(let table):
                if other.operations.contains(where: { $0.table == table }) { return true }
            default:
                if let row = operation.row {
                    if other.touches(row) { return true }
                } else if other.operations.contains(where: { if case .deleteAll(let table) = $0 { table == operation.table } else { false } }) {
                    // An insert whose key is not known yet may be any row of its table.
                    return true
                }
            }
        }
        return false
    }
}

extension WriteOperation {
    /// The table the operation writes.
    var table: Int {
        switch self {
        case .insert(let request): request.table
        case .update(let row, _), .delete(let row): row.table
        case .deleteAll(let table): table
        }
    }
}

/// Units handed to the worker together: committed in one transaction, in order.
struct WriteBatch: Sendable {
    var sequence: UInt64
    var units: [WriteUnit]
    /// The last batch whose outcome the store had taken when it made this one: the keys that
    /// batch and those before it assigned are in place of their placeholders here.
    var settledThrough: UInt64
    /// Rows streamed in after the units, in the same transaction (a bulk insert): the batch
    /// then commits whole or not at all.
    var rows: BulkRows?
}

/// What the worker reports for a batch.
struct BatchOutcome: Sendable {
    enum Result: Sendable {
        /// Committed, except the units the report lists as rejected or held.
        case committed(CommitReport)
        /// Nothing committed, for a reason that may pass (busy, disk full, I/O error).
        case failed(StoreError)
        /// Not attempted, because an earlier batch did not commit whole; the store puts its
        /// units back in order.
        case skipped
        /// Nothing committed: the sender of the batch's streamed rows cancelled them.
        case cancelled
        /// Nothing committed: the database refused an operation of a unit in a batch with
        /// streamed rows (which commits whole or not at all).
        case refused(unit: UInt64, operation: Int, StoreError)
    }

    var sequence: UInt64
    var result: Result
}

/// What a committed batch produced.
struct CommitReport: Sendable {
    /// The committed value of each cell whose last write in the batch was an `.add` (a later
    /// assignment or insert of the cell in the same batch leaves the object's value standing).
    var counterValues: [CellReference: SQLValue] = [:]
    /// The keys the database assigned, by insert request.
    var assignedKeys: [UInt64: SQLValue] = [:]
    /// Units that failed for good, by unit: the error, and which operation failed.
    var rejected: [UInt64: (error: StoreError, operation: Int)] = [:]
    /// Units left out because they touch a rejected unit's rows; they stay pending behind it.
    var held: Set<UInt64> = []
    /// INSERT, UPDATE and DELETE statements the transaction ran.
    var statementCount = 0

    /// Whether every unit of the batch committed.
    var isWhole: Bool { rejected.isEmpty && held.isEmpty }

    /// Drops the counter values of cells a later operation of the batch wrote otherwise (an
    /// assignment, an insert or a delete of the row).
    mutating func forgetCounters(of row: RowReference, columns: some Sequence<Int>) {
        guard !counterValues.isEmpty else { return }
        for column in columns { counterValues[CellReference(row: row, column: column)] = nil }
    }
}

extension WriteOperation {
    /// Merges a cell write into an insert's values or an update's cells; `false` for a delete.
    mutating func merge(_ write: CellWrite, column: Int) -> Bool {
        switch self {
        case .insert(var request):
            // Drop this enum's reference first, so that the array is mutated in place.
            self = .deleteAll(table: -1)
            request.values[column] = write.applied(to: request.values[column])
            self = .insert(request)
            return true
        case .update(let row, var cells):
            self = .deleteAll(table: -1)
            Self.merge(write, column: column, into: &cells)
            self = .update(row: row, cells: cells)
            return true
        case .delete, .deleteAll:
            return false
        }
    }

    /// Merges a cell write into changed cells kept in column order.
    static func merge(_ write: CellWrite, column: Int, into cells: inout [(column: Int, write: CellWrite)]) {
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
}
