/// The statements that keep a table's identity sequence past the keys given explicitly, so
/// that a key the database assigns later never collides with one a program or another
/// connection chose.
///
/// ```swift
/// let statement = PostgreSQLKeySequence.advance(schema, past: .integer(42))
/// _ = try session.rowsWaiting(statement.sql, statement.arguments, doing: statement.doing)
/// ```
enum PostgreSQLKeySequence {
    typealias Statement = (sql: String, arguments: [SQLValue], doing: String)

    /// After an insert given a key into a table whose key the database assigns: the statement
    /// that moves the key sequence past it.
    static func advance(after operation: WriteOperation, tables: [TableSchema]) -> Statement? {
        guard case .insert(let request) = operation, let row = request.row, tables[request.table].assignsPrimaryKey else { return nil }
        return advance(tables[request.table], past: row.key)
    }

    /// Moves an identity column's sequence past the largest key in the table, which other
    /// connections may have given explicitly, and past `given` (the largest key the commit
    /// inserts): else a key the database assigns could collide. Keys beyond what the sequence
    /// can reach (a serial column widened to `bigint`) are no concern of it, and left out.
    /// (A given key whose insert is then refused still moves the sequence: sequences leave
    /// gaps by design.)
    static func catchUp(_ schema: TableSchema, past given: Int64?) -> Statement {
        let key = quoteIdentifier(schema.primaryKey.name)
        return (
            """
            SELECT setval(sequence, top) FROM (
                SELECT s.seqrelid::regclass AS sequence,
                       greatest((SELECT max(\(key)) FROM \(quoteIdentifier(schema.name)) WHERE \(key) <= s.seqmax), CASE WHEN $3::bigint <= s.seqmax THEN $3::bigint END) AS top
                FROM pg_sequence AS s WHERE s.seqrelid = pg_get_serial_sequence($1, $2)::regclass
            ) AS found
            WHERE top > coalesce(pg_sequence_last_value(sequence), 0)
            """,
            [.text(quoteIdentifier(schema.name)), .text(schema.primaryKey.name), given.map(SQLValue.integer) ?? .null],
            "advancing the key sequence of \(schema.name)"
        )
    }

    /// The largest integer key the units insert explicitly, by table.
    static func largestGivenKeys(in units: [WriteUnit]) -> [Int: Int64] {
        var largest: [Int: Int64] = [:]
        for case .insert(let request) in units.flatMap(\.operations) {
            guard case .integer(let key)? = request.row?.key else { continue }
            largest[request.table] = max(largest[request.table] ?? key, key)
        }
        return largest
    }

    /// Moves an identity column's sequence past a key given explicitly, so that the keys the
    /// database assigns later do not collide with it (SQLite's rowid does this on its own); a
    /// key beyond the sequence's reach leaves it alone.
    static func advance(_ schema: TableSchema, past key: SQLValue) -> Statement {
        return (
            """
            SELECT setval(s.seqrelid::regclass, $2) FROM pg_sequence AS s
            WHERE s.seqrelid = pg_get_serial_sequence($1, $3)::regclass AND $2 <= s.seqmax
              AND $2 > coalesce(pg_sequence_last_value(s.seqrelid::regclass), 0)
            """,
            [.text(quoteIdentifier(schema.name)), key, .text(schema.primaryKey.name)], "advancing the key sequence of \(schema.name)"
        )
    }
}
