/// What the database answered to one read of the store, gathered stage by stage: the rows of
/// each ``DatabaseRead``, and committed rows by key (a row asked for and not found is known
/// to be missing).
struct ReadAnswers {
    private var results: [DatabaseRead: [[SQLValue]]] = [:]
    private var committedRows: [RowReference: [SQLValue]?] = [:]
    /// Which of this store's batches the database held when the answers were read (the same
    /// for every answer in hand: see ``StoreReads``); what is still queued is laid over them
    /// less those batches.
    private(set) var held = CommitProgress()

    /// Whether the answer to `read` is in hand (for ``DatabaseRead/rows(table:keys:)``, the
    /// answer for every key, whichever read brought it).
    func has(_ read: DatabaseRead) -> Bool {
        guard case .rows(let table, let keys) = read else { return results[read] != nil }
        return keys.allSatisfy { committedRows[RowReference(table: table, key: $0)] != nil }
    }

    /// The answer to `read`; empty when it was not asked (``ShownRead/needs(given:into:)`` asks
    /// for every read ``ShownRead/compose(_:)`` looks up).
    func rows(_ read: DatabaseRead) -> [[SQLValue]] {
        results[read] ?? []
    }

    /// Whether answers read while the database held `held` can be composed with those in hand:
    /// none is in hand, or they hold the same of this store's batches still in flight.
    func canJoin(_ held: CommitProgress, inFlight: some Sequence<UInt64>) -> Bool {
        (results.isEmpty && committedRows.isEmpty) || self.held.holdsTheSame(as: held, of: inFlight)
    }

    /// A row as committed: `.some(nil)` when the database has none, nil when it was not read.
    func committed(_ row: RowReference) -> [SQLValue]?? {
        committedRows[row]
    }

    /// Takes the answers to `reads`, in their order, read while the database held `held`.
    ///
    /// - Parameter keyColumn: The position of each table's primary key in its rows.
    mutating func take(_ answers: [[[SQLValue]]], of reads: [DatabaseRead], held: CommitProgress, keyColumn: (Int) -> Int) {
        self.held = held
        for (read, rows) in zip(reads, answers) {
            guard case .rows(let table, let keys) = read else {
                results[read] = rows
                continue
            }
            for key in keys { committedRows[RowReference(table: table, key: key)] = .some(nil) }
            let column = keyColumn(table)
            for row in rows { committedRows[RowReference(table: table, key: row[column])] = row }
        }
    }
}

/// The database reads a ``ShownRead`` needs, as it lists them: committed rows are asked for by
/// key, gathered into one ``DatabaseRead/rows(table:keys:)`` per table.
struct ReadNeeds {
    private(set) var reads: [DatabaseRead] = []
    private var keys: [Int: [SQLValue]] = [:]
    private var listed: Set<RowReference> = []

    /// Needs `read`.
    mutating func add(_ read: DatabaseRead) {
        reads.append(read)
    }

    /// Needs a row as committed.
    mutating func committedRow(_ row: RowReference) {
        guard listed.insert(row).inserted else { return }
        keys[row.table, default: []].append(row.key)
    }

    /// Whether nothing is listed: the read is composed from what the store holds.
    var isEmpty: Bool { reads.isEmpty && listed.isEmpty }

    /// Every read listed, the rows by key last, one read per table.
    var all: [DatabaseRead] {
        reads + keys.keys.sorted().map { DatabaseRead.rows(table: $0, keys: keys[$0] ?? []) }
    }
}
