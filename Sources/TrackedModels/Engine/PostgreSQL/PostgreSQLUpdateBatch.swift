/// A run of updates, next to each other in a commit, of distinct rows of one table that set
/// and add the same columns: one `UPDATE ... FROM (VALUES ...)` statement carries them all, so
/// that a commit of many rows costs a round trip per run instead of one per row.
///
/// Its answer names each row it updated (with the counters' new values), so that a row that is
/// gone is still told apart from the others. Each value is cast to its column's type as the
/// store read it at open, as the single-row statement's parameter takes it from its place
/// (alter a column's type with the store closed: a `numeric` that was `double precision`
/// would be given 15 digits of a real).
///
/// ```swift
/// var batch = PostgreSQLUpdateBatch(first, unit: 0, operation: 0)!
/// _ = batch.add(second, unit: 0, operation: 1)
/// let statement = batch.statement(tables[batch.table], castTypes: castTypes[batch.table])
/// ```
struct PostgreSQLUpdateBatch {
    struct Member {
        var unit: Int
        var operation: Int
        var write: WriteOperation
        var key: SQLValue
    }

    let table: Int
    let sets: [Int]
    let adds: [Int]
    private(set) var members: [Member] = []
    private var keys: Set<SQLValue> = []

    /// The most rows one statement carries: within PostgreSQL's 65,535 parameters, and a size
    /// whose statement the server plans quickly.
    private static let maximumRows = 1_000

    /// A batch of one update; nil for any other operation.
    init?(_ write: WriteOperation, unit: Int, operation: Int) {
        guard case .update(let row, let cells) = write else { return nil }
        table = row.table
        sets = cells.compactMap { if case .set = $0.write { $0.column } else { nil } }
        adds = cells.compactMap { if case .add = $0.write { $0.column } else { nil } }
        members = [Member(unit: unit, operation: operation, write: write, key: row.key)]
        keys = [row.key]
    }

    /// Adds an update of another row of the table that sets and adds the same columns;
    /// `false` (and nothing added) for any other operation, or when the batch is full.
    mutating func add(_ write: WriteOperation, unit: Int, operation: Int) -> Bool {
        guard case .update(let row, let cells) = write, row.table == table, !keys.contains(row.key),
              members.count < min(Self.maximumRows, Int(UInt16.max) / (sets.count + adds.count + 1)),
              cells.compactMap({ if case .set = $0.write { $0.column } else { nil } }) == sets,
              cells.compactMap({ if case .add = $0.write { $0.column } else { nil } }) == adds
        else { return false }
        members.append(Member(unit: unit, operation: operation, write: write, key: row.key))
        keys.insert(row.key)
        return true
    }

    /// The statement: `UPDATE t SET c = v.s0, n = t.n + v.a0 FROM (VALUES ($1::text, $2::bigint,
    /// $3::bigint), ...) AS v (s0, a0, k) WHERE t.id = v.k RETURNING t.id, t.n`.
    ///
    /// - Parameter castTypes: The type each column's value is cast to
    ///   (``PostgreSQLSchema/castTypes(of:catalog:)``).
    func statement(_ schema: TableSchema, castTypes: [String]) -> (sql: String, arguments: [SQLValue], doing: String) {
        let name = quoteIdentifier(schema.name)
        let types = sets.map { castTypes[$0] } + adds.map { castTypes[$0] } + [castTypes[schema.primaryKeyIndex]]
        var arguments: [SQLValue] = []
        arguments.reserveCapacity(members.count * types.count)
        for member in members {
            guard case .update(_, let cells) = member.write else { continue }
            arguments += cells.compactMap { if case .set(let value) = $0.write { value } else { nil } }
            arguments += cells.compactMap { if case .add(let delta) = $0.write { .integer(delta) } else { nil } }
            arguments.append(member.key)
        }
        let tuples = members.indices.map { row in
            "(" + types.enumerated().map { "$\(row * types.count + $0 + 1)::\($1)" }.joined(separator: ", ") + ")"
        }
        let assignments = sets.enumerated().map { "\(quoteIdentifier(schema.columns[$1].name)) = v.s\($0)" }
            + adds.enumerated().map { "\(quoteIdentifier(schema.columns[$1].name)) = t.\(quoteIdentifier(schema.columns[$1].name)) + v.a\($0)" }
        let names = sets.indices.map { "s\($0)" } + adds.indices.map { "a\($0)" } + ["k"]
        let returning = ([schema.primaryKey.name] + adds.map { schema.columns[$0].name }).map { "t.\(quoteIdentifier($0))" }
        return (
            "UPDATE \(name) AS t SET \(assignments.joined(separator: ", ")) FROM (VALUES \(tuples.joined(separator: ", "))) AS v (\(names.joined(separator: ", "))) "
                + "WHERE t.\(quoteIdentifier(schema.primaryKey.name)) = v.k RETURNING \(returning.joined(separator: ", "))",
            arguments, "updating \(schema.name)"
        )
    }

    /// What the single-row statement would have answered for each member, in order: its
    /// counters' new values (one row), or no row for a row that is gone.
    func answers(from rows: [[SQLValue]]) -> [[[SQLValue]]] {
        var byKey: [SQLValue: [SQLValue]] = [:]
        for row in rows where !row.isEmpty { byKey[row[0]] = Array(row.dropFirst()) }
        return members.map { member in
            guard let values = byKey[member.key] else { return [] }
            // The single-row statement returns a placeholder column when it adds to nothing.
            return [adds.isEmpty ? [.integer(1)] : values]
        }
    }
}
