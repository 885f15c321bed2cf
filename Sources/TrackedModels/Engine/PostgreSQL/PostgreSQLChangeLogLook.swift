/// One look at the PostgreSQL change log (see ``PostgreSQLChangeLogReader``): a single statement,
/// so a single snapshot, in which the transactions it shows ended, how far the log was pruned,
/// the entries it sees, the catalog's digest and the rows the entries name all agree (a pruning
/// either shows in all of them or in none).
///
/// Its answer is one row of the snapshot, the pruning, the digest (and the transaction's id),
/// then one row per entry, then, for each table it reads rows of, that table's rows the entries
/// name, each in the table's own columns; a column of `part` tells which:
///
/// ```sql
/// WITH now AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot, …),
///     entries AS MATERIALIZED (SELECT seq, xid, tbl, row_key, kind, mask FROM trackedmodels_changes WHERE …)
/// SELECT 0 AS part, now.snapshot, …, NULL::bigint, NULL::text FROM now
/// UNION ALL SELECT 1, NULL, …, e.seq, NULL, NULL FROM entries e
/// UNION ALL SELECT 2, NULL, …, t."id", t."title" FROM "rows" t
///     WHERE t."id" = ANY(ARRAY(SELECT e.row_key::bigint FROM entries e WHERE e.tbl = 'rows'))
/// ORDER BY part, seq
/// ```
struct PostgreSQLChangeLogLook {
    let sql: String
    /// The tables whose rows the look reads, in the order of their parts.
    private let tables: [Int]
    /// The offset of each table's first column, by table.
    private let offsets: [Int: Int]
    private let schemas: [TableSchema]
    private let tableIndexByName: [String: Int]

    /// The columns before the tables' rows: part, snapshot, pruned, fingerprint, transaction
    /// (the first row's), xid, tbl, row_key, kind, mask, seq (an entry's).
    private static let leadingColumns = 11
    /// The `part` of the first row, of the entries', and of the first table's rows (the next
    /// table's is one more).
    private static let nowPart: Int64 = 0, entryPart: Int64 = 1, firstTablePart: Int64 = 2

    /// - Parameters:
    ///   - columnTypes: Each table's columns' types, as PostgreSQL names them.
    ///   - tables: The tables whose changed rows the look reads (those that fit their models).
    ///   - assigning: Whether the look gives its transaction an id (the first statement of a
    ///     commit), returned with the answer.
    init(schemas: [TableSchema], columnTypes: [[String]], readingRowsOf tables: [Int], assigning: Bool) {
        self.schemas = schemas
        tableIndexByName = Dictionary(schemas.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        var offsets: [Int: Int] = [:]
        var width = Self.leadingColumns
        for table in tables {
            offsets[table] = width
            width += schemas[table].columns.count
        }
        self.offsets = offsets
        func nulls(_ count: Int) -> String { String(repeating: ", NULL", count: count) }
        // The first branch names every column's type: a `UNION` settles each column's type pair
        // by pair, and two untyped NULLs would settle on `text`.
        let typedNulls = tables.flatMap { columnTypes[$0] }.map { ", NULL::\($0)" }.joined()
        // `now` is materialized: inlined, the snapshot's text and the catalog's digest were made
        // again for every row. The snapshot is the statement's, taken before the id is assigned:
        // as in a commit whose first write assigns it, the id is past every transaction the
        // snapshot shows. The window's two parts (transactions past the last snapshot, and those
        // it showed running, which are below its `xmax`) are read apart: joined by `OR`, the
        // statement's generic plan (the one a prepared statement keeps) scans the whole log,
        // however little of it is new.
        var sql = """
            WITH now AS MATERIALIZED (
                SELECT pg_current_snapshot()::text AS snapshot, (SELECT pruned_below FROM \(PostgreSQLChangeLog.stateTable) WHERE id = 1) AS pruned,
                    \(PostgreSQLChangeLog.fingerprintExpression(schemas)) AS fingerprint, \(assigning ? "pg_current_xact_id()::text" : "NULL::text") AS transaction
            ), entries AS MATERIALIZED (
                SELECT c.seq, c.xid, c.tbl, c.row_key, c.kind, c.mask FROM \(PostgreSQLChangeLog.table) AS c
                WHERE c.xid >= $1::text::xid8 AND NOT c.xid = ANY($3::text::xid8[])
                UNION ALL
                SELECT c.seq, c.xid, c.tbl, c.row_key, c.kind, c.mask FROM \(PostgreSQLChangeLog.table) AS c
                WHERE c.xid = ANY($2::text::xid8[]) AND c.xid < $1::text::xid8 AND NOT c.xid = ANY($3::text::xid8[])
            )
            SELECT \(Self.nowPart) AS part, now.snapshot, now.pruned::text, now.fingerprint, now.transaction,
                NULL::text, NULL::text, NULL::text, NULL::smallint, NULL::bigint, NULL::bigint AS seq\(typedNulls)
            FROM now
            UNION ALL
            SELECT \(Self.entryPart), NULL, NULL, NULL, NULL, e.xid::text, e.tbl, e.row_key, e.kind, e.mask, e.seq\(nulls(width - Self.leadingColumns))
            FROM entries AS e
            """
        for (index, table) in tables.enumerated() {
            let schema = schemas[table]
            let offset = offsets[table]!
            let columns = schema.columns.map { "t.\(quoteIdentifier($0.name))" }.joined(separator: ", ")
            sql += """

                UNION ALL
                SELECT \(Self.firstTablePart + Int64(index))\(nulls(offset - 1)), \(columns)\(nulls(width - offset - schema.columns.count))
                FROM \(quoteIdentifier(schema.name)) AS t
                WHERE t.\(quoteIdentifier(schema.primaryKey.name)) = ANY(ARRAY(SELECT e.row_key::\(columnTypes[table][schema.primaryKeyIndex]) FROM entries AS e WHERE e.tbl = \(quoteLiteral(schema.name))))
                """
        }
        self.sql = sql + "\nORDER BY part, seq"
        self.tables = tables
    }

    /// What a look read.
    struct Answer {
        /// Which transactions had ended as the statement ran (nil if the server gave none).
        var snapshot: PostgreSQLChangeLogReader.Snapshot?
        var prunedBelow: UInt64?
        var fingerprint: SQLValue
        /// The transaction's id, for a look that assigns one.
        var transaction: UInt64?
        /// The entries of the transactions in the window, but the store's own, in log order.
        var entries: [ChangeLogEntries.Entry] = []
        /// The current rows the entries name, by table and key, for each table the look reads:
        /// a row that is gone is not there.
        var rows: [Int: [SQLValue: [SQLValue]]] = [:]
    }

    /// Runs the look for the transactions `seen` could not see, less `ownTransactions`.
    func read(seen: PostgreSQLChangeLogReader.Snapshot, ownTransactions: Set<UInt64>, on session: PostgresPipeline) throws -> Answer {
        let rows = try session.rowsWaiting(
            sql, [.text(String(seen.xmax)), Self.xidArray(seen.inProgress), Self.xidArray(ownTransactions.sorted())], reused: true,
            doing: "reading the change log"
        )
        guard let first = rows.first, first[0] == .integer(Self.nowPart) else { return Answer(fingerprint: .null) }
        var answer = Answer(fingerprint: first[3])
        if case .text(let text) = first[1] { answer.snapshot = PostgreSQLChangeLogReader.Snapshot(text) }
        if case .text(let text) = first[2] { answer.prunedBelow = UInt64(text) }
        if case .text(let text) = first[4] { answer.transaction = UInt64(text) }
        for table in tables { answer.rows[table] = [:] }
        for row in rows.dropFirst() {
            guard case .integer(let part) = row[0] else { continue }
            if part == Self.entryPart {
                guard case .text(let name) = row[6], let table = tableIndexByName[name], case .integer(let kind) = row[8], case .integer(let mask) = row[9] else { continue }
                let key: SQLValue = if case .text(let keyText) = row[7] {
                    PostgreSQLChangeLog.key(keyText, type: schemas[table].primaryKey.type)
                } else {
                    .null
                }
                answer.entries.append(ChangeLogEntries.Entry(table: table, key: key, kind: kind, mask: mask))
            } else if part >= Self.firstTablePart, let table = tables.dropFirst(Int(part - Self.firstTablePart)).first, let offset = offsets[table] {
                let values = Array(row[offset..<offset + schemas[table].columns.count])
                answer.rows[table]?[values[schemas[table].primaryKeyIndex]] = values
            }
        }
        return answer
    }

    /// Transaction ids as an `xid8[]` literal.
    private static func xidArray(_ ids: [UInt64]) -> SQLValue {
        .text("{\(ids.map(String.init).joined(separator: ","))}")
    }
}
