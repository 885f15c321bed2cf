/// Where a commit inserts and deletes rows with keys the program gave, in the tables that
/// foreign keys the database declares point at, so that a link written ahead of its target's
/// insert waits for it: the foreign key would refuse the link, the target's row not being in
/// yet. The engine writes NULL first and the key once the target's row is in, in the same
/// transaction, as it does for a ``DeferredLink`` to a key the database is still to assign.
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
    /// What the commit does to a row of a target table, in order: insert it (the request) or
    /// delete it (`nil`), each at its position among the commit's operations (counted across
    /// units, in the order they run).
    private var rows: [RowReference: [(position: Int, insert: UInt64?)]] = [:]
    /// Where the commit deletes every row of a target table, by table.
    private var clears: [Int: [Int]] = [:]
    /// The key each of those inserts writes and its position, by request.
    private var keys: [UInt64: (position: Int, key: SQLValue)] = [:]
    /// Where declared foreign keys point.
    private let targets: LinkTargets

    /// The keyed inserts and deletes of `units` in the tables `targets` names.
    init(_ units: [WriteUnit], targets: LinkTargets) {
        self.targets = targets
        guard !targets.tables.isEmpty else { return }
        var position = 0
        for unit in units {
            for operation in unit.operations {
                defer { position += 1 }
                guard targets.tables.contains(operation.table) else { continue }
                switch operation {
                case .insert(let request):
                    guard let row = request.row else { continue }
                    rows[row, default: []].append((position, request.id))
                    keys[request.id] = (position, row.key)
                case .delete(let row):
                    rows[row, default: []].append((position, nil))
                case .deleteAll(let table):
                    clears[table, default: []].append(position)
                case .update:
                    continue
                }
            }
        }
    }

    var isEmpty: Bool { keys.isEmpty }

    /// The insert request of the row a link in `column` of `table` names by `key`, when the row
    /// is not there at `position` and the commit inserts it next: what the commit does to that
    /// row after `position` first is that insert (not a delete of a row that was there).
    func insert(table: Int, column: Int, key: SQLValue, after position: Int) -> UInt64? {
        guard let target = targets.byColumn[table][column], let events = rows[RowReference(table: target, key: key)],
              let next = events.first(where: { $0.position > position }), let request = next.insert else { return nil }
        if let clear = clears[target]?.first(where: { $0 > position }), clear < next.position { return nil }
        return request
    }

    /// The key a keyed insert writes, once the commit has run it (by `position`).
    func key(ofInsert request: UInt64, through position: Int) -> SQLValue? {
        guard let insert = keys[request], insert.position <= position else { return nil }
        return insert.key
    }
}

/// The table each to-one column's declared foreign key points at, by table, and the set of
/// those tables: read once at open (``ForeignKey/linkTargets(of:schemas:)``), asked at every
/// commit.
struct LinkTargets {
    let byColumn: [[Int: Int]]
    let tables: Set<Int>

    init(byColumn: [[Int: Int]]) {
        self.byColumn = byColumn
        tables = Set(byColumn.flatMap(\.values))
    }
}
