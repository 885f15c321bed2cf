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
}

/// A row to insert.
struct InsertRequest: Sendable {
    var table: Int
    /// The values, in the table's column order.
    var values: [SQLValue]
    /// The row, or `nil` when SQLite assigns the primary key (reported back under `id`).
    var row: RowReference?
    var id: UInt64
}

/// One change the writer applies, in program order.
enum WriteOperation: Sendable {
    case insert(InsertRequest)
    /// Writes changed cells of one row, in column order.
    case update(row: RowReference, cells: [(column: Int, write: CellWrite)])
    case delete(row: RowReference)
    /// Deletes every row of a table.
    case deleteAll(table: Int)
}

/// The operations of one flush: committed in one transaction, in order.
struct WriteBatch: Sendable {
    var sequence: UInt64
    var operations: [WriteOperation]
}

/// What the writer reports for a batch.
struct BatchOutcome: Sendable {
    enum Result: Sendable {
        case committed(CommitReport)
        case failed(SQLiteError)
        /// Not attempted, because an earlier batch failed; it is pending again in the store.
        case skipped
    }

    var sequence: UInt64
    var result: Result
}

/// What a committed batch produced.
struct CommitReport: Sendable {
    /// The committed value of each cell that an `.add` wrote.
    var counterValues: [(cell: CellReference, value: SQLValue)] = []
    /// The keys SQLite assigned, by insert request.
    var assignedKeys: [UInt64: SQLValue] = [:]
}
