/// Where a commit inserts rows with keys the program gave, in the tables to-ones point at, so
/// that a link written ahead of its target's insert waits for it: a foreign key the database
/// declares would refuse the link, since the target's row is not in yet. The engine writes
/// NULL first and the key once the target's row is in, in the same transaction, as it does for
/// a ``DeferredLink`` to a key the database is still to assign.
///
/// A link comes ahead of its target when it merged into an earlier write of the row that
/// holds it: a row inserted, then pointed at a list inserted after it.
///
/// ```
/// insert into rows:   id = 1, list_id = NULL     (list 7 is not in yet)
/// insert into lists:  id = 7, title = 'Groceries'
/// update rows:        list_id = 7 where id = 1
/// ```
struct KeyedInserts {
    /// Each keyed insert into a table some to-one points at, by row: its position among the
    /// commit's operations (counted across units, in the order they run) and its request.
    private var inserts: [RowReference: (position: Int, request: UInt64)] = [:]
    /// The same inserts by request, with the key each writes.
    private var keys: [UInt64: (position: Int, key: SQLValue)] = [:]
    /// The table each to-one column points at, by table; absent for a model the store does not
    /// manage.
    private let targets: [[Int: Int]]

    /// The keyed inserts of `units` into tables that `targets` names.
    ///
    /// - Parameter targets: The table each to-one column points at, by table
    ///   (``linkTargets(of:)``).
    init(_ units: [WriteUnit], targets: [[Int: Int]]) {
        self.targets = targets
        let targetTables = Set(targets.flatMap(\.values))
        guard !targetTables.isEmpty else { return }
        var position = 0
        for unit in units {
            for operation in unit.operations {
                if case .insert(let request) = operation, let row = request.row, targetTables.contains(row.table) {
                    inserts[row] = (position, request.id)
                    keys[request.id] = (position, row.key)
                }
                position += 1
            }
        }
    }

    /// The table each to-one column of `tables` points at, by table.
    static func linkTargets(of tables: [TableSchema]) -> [[Int: Int]] {
        tables.map { schema in
            var targets: [Int: Int] = [:]
            for column in schema.relationshipColumns {
                let target = schema.columns[column].reference!.target._$schema
                targets[column] = tables.firstIndex(of: target)
            }
            return targets
        }
    }

    var isEmpty: Bool { inserts.isEmpty }

    /// The insert request of the row a link in `column` of `table` names by `key`, when the
    /// commit inserts that row after `position`.
    func insert(table: Int, column: Int, key: SQLValue, after position: Int) -> UInt64? {
        guard let target = targets[table][column], let insert = inserts[RowReference(table: target, key: key)], insert.position > position else { return nil }
        return insert.request
    }

    /// The key a keyed insert writes, once the commit has run it (by `position`).
    func key(ofInsert request: UInt64, through position: Int) -> SQLValue? {
        guard let insert = keys[request], insert.position <= position else { return nil }
        return insert.key
    }
}
