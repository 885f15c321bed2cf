/// One look at the PostgreSQL change log (see ``PostgreSQLChangeLogReader``): a single statement,
/// so a single snapshot, in which the transactions it shows ended, how far the log was pruned,
/// the entries it sees and the catalog's digest all agree (a pruning either shows in all of them
/// or in none).
///
/// Its answer is one row of the snapshot, the pruning, the digest (and the transaction's id),
/// then one row per entry, in log order; a column of `part` tells which:
///
/// ```sql
/// WITH now AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot, …),
///     entries AS MATERIALIZED (SELECT seq, xid, tbl, row_key, kind, mask FROM trackedmodels_changes WHERE …)
/// SELECT 0 AS part, now.snapshot, …, NULL::bigint AS seq FROM now
/// UNION ALL SELECT 1, NULL, …, e.seq FROM entries e
/// ORDER BY part, seq
/// ```
struct PostgreSQLChangeLogLook {
    let sql: String
    private let schemas: [TableSchema]
    private let tableIndexByName: [String: Int]

    /// The `part` of the first row and of the entries'.
    private static let nowPart: Int64 = 0, entryPart: Int64 = 1

    /// - Parameter assigning: Whether the look gives its transaction an id (the first statement
    ///   of a commit), returned with the answer.
    init(schemas: [TableSchema], tableIndexByName: [String: Int], assigning: Bool) {
        self.schemas = schemas
        self.tableIndexByName = tableIndexByName
        // `now` is materialized: inlined, the snapshot's text and the catalog's digest were made
        // again for every entry (some 50 µs an entry with 20 connections open); and they are
        // sent once, not with every entry. The snapshot is the statement's, taken before the id
        // is assigned: as in a commit whose first write assigns it, the id is past every
        // transaction the snapshot shows.
        //
        // The window's two parts (transactions past the last snapshot, and those it showed
        // running, which are below its `xmax`) are read apart: joined by `OR`, the generic plan
        // (the one PostgreSQL keeps for a prepared statement) scans the whole log, however
        // little of it is new. The first part's upper bound (the largest id) says nothing, but
        // a range with both ends is estimated narrow, so its generic plan uses the index too.
        sql = """
            WITH now AS MATERIALIZED (
                SELECT pg_current_snapshot()::text AS snapshot, (SELECT pruned_below FROM \(PostgreSQLChangeLog.stateTable) WHERE id = 1) AS pruned,
                    \(PostgreSQLChangeLog.fingerprintExpression(schemas)) AS fingerprint, \(assigning ? "pg_current_xact_id()::text" : "NULL::text") AS transaction
            ), entries AS MATERIALIZED (
                SELECT c.seq, c.xid, c.tbl, c.row_key, c.kind, c.mask FROM \(PostgreSQLChangeLog.table) AS c
                WHERE c.xid >= $1::text::xid8 AND c.xid <= '\(UInt64.max)'::xid8 AND NOT c.xid = ANY($3::text::xid8[])
                UNION ALL
                SELECT c.seq, c.xid, c.tbl, c.row_key, c.kind, c.mask FROM \(PostgreSQLChangeLog.table) AS c
                WHERE c.xid = ANY($2::text::xid8[]) AND c.xid < $1::text::xid8 AND NOT c.xid = ANY($3::text::xid8[])
            )
            SELECT \(Self.nowPart) AS part, now.snapshot, now.pruned::text, now.fingerprint, now.transaction,
                NULL::text, NULL::text, NULL::text, NULL::smallint, NULL::bigint, NULL::bigint AS seq
            FROM now
            UNION ALL
            SELECT \(Self.entryPart), NULL, NULL, NULL, NULL, e.xid::text, e.tbl, e.row_key, e.kind, e.mask, e.seq
            FROM entries AS e
            ORDER BY part, seq
            """
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
    }

    /// Runs the look for the transactions `seen` could not see, less the store's own
    /// (`ownTransactions`).
    func read(seen: PostgreSQLChangeLogReader.Snapshot, ownTransactions: Set<UInt64>, on session: PostgresPipeline) throws -> Answer {
        // Only the store's transactions the window can hold are sent: those the last snapshot
        // showed running or had not seen begin.
        let inWindow = ownTransactions.filter { $0 >= seen.xmax || seen.inProgress.contains($0) }
        let rows = try session.rowsWaiting(
            sql, [.text(String(seen.xmax)), Self.xidArray(seen.inProgress), Self.xidArray(inWindow.sorted())], reused: true,
            doing: "reading the change log"
        )
        guard let first = rows.first, first[0] == .integer(Self.nowPart) else { return Answer(fingerprint: .null) }
        var answer = Answer(fingerprint: first[3])
        if case .text(let text) = first[1] { answer.snapshot = PostgreSQLChangeLogReader.Snapshot(text) }
        if case .text(let text) = first[2] { answer.prunedBelow = UInt64(text) }
        if case .text(let text) = first[4] { answer.transaction = UInt64(text) }
        for row in rows.dropFirst() {
            guard row[0] == .integer(Self.entryPart), case .text(let name) = row[6], let table = tableIndexByName[name],
                  case .integer(let kind) = row[8], case .integer(let mask) = row[9]
            else { continue }
            let key: SQLValue = if case .text(let keyText) = row[7] {
                PostgreSQLChangeLog.key(keyText, type: schemas[table].primaryKey.type)
            } else {
                .null
            }
            answer.entries.append(ChangeLogEntries.Entry(table: table, key: key, kind: kind, mask: mask))
        }
        return answer
    }

    /// Transaction ids as an `xid8[]` literal.
    private static func xidArray(_ ids: [UInt64]) -> SQLValue {
        .text("{\(ids.map(String.init).joined(separator: ","))}")
    }
}
