import Foundation

/// Reads the PostgreSQL change log for one store, on the database worker's queue: the entries
/// of every transaction that committed since its last look, less the entries of its own
/// commits (see ``PostgreSQLChangeLog``).
final class PostgreSQLChangeLogReader {
    private let schemas: [TableSchema]
    private let layouts: [ChangeLogEntries.Layout]
    private let tableIndexByName: [String: Int]
    /// This store's row in the readers table.
    let id = UUID().uuidString
    /// What the last look saw: every transaction it shows as ended has been read (or ended
    /// before the store opened).
    private var seen: Snapshot
    /// The store's own committed transactions at or past the horizon: their entries are skipped.
    private var ownTransactions: Set<UInt64> = []
    /// When this reader last recorded its horizon and pruned.
    private var lastRecorded = ContinuousClock.now - .seconds(3600)
    /// How long a reader may be away before the log is pruned past it.
    private let staleAfter: Duration
    private let recordEvery: Duration = .seconds(1)

    init(schemas: [TableSchema], layouts: [ChangeLogEntries.Layout], seen: Snapshot, staleAfter: Duration) {
        self.schemas = schemas
        self.layouts = layouts
        self.seen = seen
        self.staleAfter = staleAfter
        tableIndexByName = Dictionary(schemas.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every entry of a transaction below this id has been read: the oldest transaction that
    /// was running at the last look. The log is kept from here on for this reader.
    var horizon: UInt64 { seen.xmin }

    /// Which transactions had ended at one moment, as `pg_current_snapshot()` tells: every one
    /// below `xmax` but those `inProgress`.
    struct Snapshot: Equatable {
        var xmin: UInt64
        var xmax: UInt64
        var inProgress: [UInt64]

        /// Reads the text form, `xmin:xmax:xip,xip,...`.
        init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, let xmin = UInt64(parts[0]), let xmax = UInt64(parts[1]) else { return nil }
            let inProgress = parts[2].split(separator: ",").compactMap { UInt64($0) }
            self.xmin = xmin
            self.xmax = xmax
            self.inProgress = inProgress.sorted()
        }
    }

    /// The current snapshot, in its text form.
    static let snapshotSQL = "SELECT pg_current_snapshot()::text"

    /// Where the reader stands: what a failed read or a rolled-back transaction goes back to.
    struct Position {
        fileprivate var seen: Snapshot
        fileprivate var ownTransactions: Set<UInt64>
    }

    var position: Position { Position(seen: seen, ownTransactions: ownTransactions) }

    func rewind(to position: Position) {
        seen = position.seen
        ownTransactions = position.ownTransactions
    }

    /// Reads the entries of the transactions that ended since the last look (those the last
    /// snapshot showed running or not yet begun, which this statement sees committed) and
    /// reloads their rows. Records the horizon and prunes the log now and then.
    ///
    /// Transactions commit in any order: one that began before another may end after it. The
    /// window is therefore not "entries past the last one read" but "entries of transactions
    /// the last look could not see", so that a commit is heard at the next look whatever else
    /// is still running, and once only.
    ///
    /// - Returns: What others committed; nil when no transaction ended since the last look.
    func collect(on session: PostgresSession) throws -> ExternalChangeBatch? {
        var batch = ExternalChangeBatch()
        // One statement, so one snapshot: the transactions it shows ended, how far the log was
        // pruned, and the entries it sees agree (a pruning either shows in both or in neither).
        let rows = try session.rowsWaiting(
            """
            WITH now AS (
                SELECT pg_current_snapshot()::text AS snapshot, (SELECT pruned_below FROM \(PostgreSQLChangeLog.stateTable) WHERE id = 1) AS pruned
            )
            SELECT now.snapshot, now.pruned::text, c.xid::text, c.tbl, c.row_key, c.kind, c.mask
            FROM now LEFT JOIN \(PostgreSQLChangeLog.table) AS c ON c.xid >= $1::text::xid8 OR c.xid = ANY($2::text::xid8[])
            ORDER BY c.seq
            """,
            [.text(String(seen.xmax)), .text("{\(seen.inProgress.map(String.init).joined(separator: ","))}")], doing: "reading the change log"
        )
        guard case .text(let snapshotText) = rows.first?[0], let now = Snapshot(snapshotText) else { return nil }
        if case .text(let prunedText) = rows.first?[1], let pruned = UInt64(prunedText), pruned > horizon {
            // Entries this reader had not read were pruned: it was away too long.
            batch.resetTables = Array(schemas.indices)
            move(to: now)
            try recordIfDue(on: session, force: true)
            return batch
        }
        guard now != seen else {
            try recordIfDue(on: session)
            return nil
        }
        let entries = rows.compactMap { row -> ChangeLogEntries.Entry? in
            guard case .text(let xidText) = row[2], let xid = UInt64(xidText), !ownTransactions.contains(xid),
                  case .text(let name) = row[3], let table = tableIndexByName[name],
                  case .integer(let kind) = row[5], case .integer(let mask) = row[6]
            else { return nil }
            let key: SQLValue = if case .text(let keyText) = row[4] {
                PostgreSQLChangeLog.key(keyText, type: schemas[table].primaryKey.type)
            } else {
                .null
            }
            return ChangeLogEntries.Entry(table: table, key: key, kind: kind, mask: mask)
        }
        try merge(entries, into: &batch, on: session)
        move(to: now)
        try recordIfDue(on: session)
        return batch
    }

    /// Merges entries per row and reloads the rows that are still there.
    func merge(_ entries: [ChangeLogEntries.Entry], into batch: inout ExternalChangeBatch, on session: PostgresSession) throws {
        try ChangeLogEntries.merge(entries, schemas: schemas, layouts: layouts, into: &batch) { table, keys in
            try Self.rows(of: schemas[table], keys: keys, on: session)
        }
    }

    /// Notes a transaction of this store's own that committed: its entries are not another's.
    func noteOwnTransaction(_ xid: UInt64) {
        if xid >= horizon { ownTransactions.insert(xid) }
    }

    private func move(to now: Snapshot) {
        seen = now
        ownTransactions = ownTransactions.filter { $0 >= now.xmin }
    }

    /// The current rows of a table by key, in model column order.
    static func rows(of schema: TableSchema, keys: [SQLValue], on session: PostgresSession) throws -> [SQLValue: [SQLValue]] {
        guard !keys.isEmpty else { return [:] }
        let keyIndex = schema.primaryKeyIndex
        var found: [SQLValue: [SQLValue]] = [:]
        let sql = "\(schema.selectSQL) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ANY($1)"
        for start in stride(from: 0, to: keys.count, by: 1000) {
            let chunk = Array(keys[start..<min(start + 1000, keys.count)])
            for row in try session.rowsWaiting(sql, [PostgresValues.arrayLiteral(chunk)], doing: "reading rows of \(schema.name)") {
                found[row[keyIndex]] = row
            }
        }
        return found
    }

    /// Records the horizon in the readers table and prunes the log below the slowest reader seen
    /// lately, at most once a second unless forced.
    private func recordIfDue(on session: PostgresSession, force: Bool = false) throws {
        let now = ContinuousClock.now
        guard force || now - lastRecorded >= recordEvery else { return }
        lastRecorded = now
        let stale = "\(Int(staleAfter.components.seconds)) seconds"
        _ = try session.rowsWaiting(
            """
            WITH recorded AS (
                INSERT INTO \(PostgreSQLChangeLog.readersTable) (id, horizon, seen) VALUES ($1, $2::text::xid8, now())
                ON CONFLICT (id) DO UPDATE SET horizon = excluded.horizon, seen = now()
            ), forgotten AS (
                DELETE FROM \(PostgreSQLChangeLog.readersTable) WHERE seen < now() - $3::text::interval AND id <> $1
            ), slowest AS (
                SELECT least($2::text::xid8, (SELECT min(horizon) FROM \(PostgreSQLChangeLog.readersTable) WHERE seen >= now() - $3::text::interval AND id <> $1)) AS below
            ), moved AS (
                UPDATE \(PostgreSQLChangeLog.stateTable) SET pruned_below = slowest.below FROM slowest
                WHERE id = 1 AND pruned_below < slowest.below RETURNING pruned_below
            )
            DELETE FROM \(PostgreSQLChangeLog.table) WHERE xid < (SELECT pruned_below FROM moved)
            """,
            [.text(id), .text(String(horizon)), .text(stale)], doing: "recording the change log position"
        )
    }

    /// Forgets this reader, so that the log is not kept for it (at close).
    func forget(on session: PostgresSession) {
        _ = try? session.rowsWaiting("DELETE FROM \(PostgreSQLChangeLog.readersTable) WHERE id = $1", [.text(id)], doing: "closing")
    }
}
