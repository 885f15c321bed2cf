import Foundation

/// Reads the PostgreSQL change log for one store, on the database worker's queue: the entries
/// of every transaction that committed since its last look, less the entries of its own
/// commits (see ``PostgreSQLChangeLog``).
///
/// Nothing goes deaf silently: a look also reads a digest of the log's catalog (see
/// ``PostgreSQLChangeLog/fingerprintExpression(_:)``). When it changed (a trigger dropped or
/// disabled, the function replaced, a table rebuilt or altered, the log dropped), the look
/// reads no entries; the writer has the reader ``repair(on:)`` the log, then looks again: the
/// tables whose part of the log changed are reset, the tables that no longer fit their models
/// are reported and left out until they do.
///
/// The digest costs a look most of its server time (0.43 of 0.54 ms, a prepared look at an
/// idle log), and a watcher under a stream of commits looks at every notification. So a look
/// that answers a notification, while the last digest read matched, reads a smaller one
/// instead (``PostgreSQLChangeLog/triggersFingerprintExpression(_:)``): the identities of the
/// log tables and the row versions of the tracked tables, their triggers and trigger
/// functions, which catches as soon as before a trigger dropped, disabled or made again, a
/// function replaced (by another store's repair, too, which may lay the column mask out anew),
/// a table rebuilt or rewritten (a column retyped to another storage) and the log made again.
/// Every other look reads the whole digest: the poll timer's (every poll interval, 250 ms or
/// longer), one the program asks for, one retried after a failure, a commit's. A column
/// renamed or dropped under the store is then found within a poll interval: meanwhile a look
/// whose rows cannot be read by the model's columns fails and moves nothing, and its retry
/// reads the whole digest.
final class PostgreSQLChangeLogReader {
    private let schemas: [TableSchema]
    /// The log as last installed or repaired.
    private var installation: PostgreSQLChangeLog.Installation
    private let tableIndexByName: [String: Int]
    /// The statement of a look, with the fingerprint.
    private let lookSQL: String
    /// The statement of a look with the triggers' fingerprint only, for a look answering a
    /// notification.
    private let signalledLookSQL: String
    /// The statement of a look inside a commit: it also gives the transaction its id (see
    /// ``lookTransaction``), which would otherwise cost the commit a round trip of its own.
    private let committingLookSQL: String
    /// The id the last look inside a commit gave its transaction: the commit's own (its log
    /// entries are the store's, and a connection lost at `COMMIT` asks the server about it).
    /// Nil after a look outside a commit.
    private(set) var lookTransaction: UInt64?
    /// Whether the last look found the log's catalog changed since it was installed.
    private(set) var needsRepair = false
    /// Whether the next look reads the whole catalog's digest whatever brings it: the first
    /// one, and the first after the reader went back to an earlier position (a repair rolled
    /// back with it is then found again at once, a column change too).
    private var readsWholeCatalogNext = true
    /// The tables that no longer fit their models (altered or dropped under the store): their
    /// entries are left out, and their changes are heard again, as a reset, once they fit.
    private var unfit: Set<Int> = []
    /// The differences last published: the same ones are not published again.
    private var reported: [SchemaDifference] = []
    /// This store's row in the readers table.
    let id = UUID().uuidString
    /// What the last look saw: every transaction it shows as ended has been read (or ended
    /// before the store opened).
    private var seen: Snapshot
    /// The store's own committed transactions at or past the horizon: their entries are skipped.
    private var ownTransactions: Set<UInt64> = []
    /// When this reader last recorded its horizon and pruned.
    private var lastRecorded = ContinuousClock.now - .seconds(3600)
    /// Whether the horizon is to be recorded at once (a look found the log pruned past it).
    private var recordsNow = false
    /// How long a reader may be away before the log is pruned past it.
    private let staleAfter: Duration
    private let recordEvery: Duration = .seconds(1)

    init(schemas: [TableSchema], installation: PostgreSQLChangeLog.Installation, seen: Snapshot, staleAfter: Duration) {
        self.schemas = schemas
        self.installation = installation
        self.seen = seen
        self.staleAfter = staleAfter
        tableIndexByName = Dictionary(schemas.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        // One statement, so one snapshot: the transactions it shows ended, how far the log was
        // pruned, the entries it sees and the catalog agree (a pruning either shows in both or
        // in neither). `now` is materialized: inlined, the snapshot's text and the catalog's
        // digest were made again for every entry (some 50 µs an entry with 20 connections open).
        // Its first row, whose `seq` is NULL, says what `now` holds; each entry follows in a row
        // of its own, without `now`'s texts again (a watcher reads every entry of every commit).
        // The entries' window is also bounded as a range, from the last look's oldest running
        // transaction ($3, below every id the window takes) to this snapshot's `xmax` (no
        // visible entry is past it): the planner then costs a plan for any parameters as a
        // short index range and keeps it, where the bare window was planned again at every
        // look (0.30 ms of each look's 0.65 ms on the server, `pg_stat_statements`, ten
        // watchers), the catalog's digest with it.
        func look(assigning: Bool, readingWholeCatalog: Bool = true) -> String {
            """
            WITH now AS MATERIALIZED (
                SELECT pg_current_snapshot()::text AS snapshot, (SELECT pruned_below FROM \(PostgreSQLChangeLog.stateTable) WHERE id = 1) AS pruned,
                    \(readingWholeCatalog ? PostgreSQLChangeLog.fingerprintExpression(schemas) : PostgreSQLChangeLog.triggersFingerprintExpression(schemas)) AS fingerprint\(assigning ? ", pg_current_xact_id()::text AS transaction" : "")
            )
            SELECT NULL::bigint AS seq, now.snapshot, now.pruned::text, now.fingerprint, NULL::text, NULL::text, NULL::text, NULL::smallint, NULL::bigint\(assigning ? ", now.transaction" : "")
            FROM now
            UNION ALL
            SELECT c.seq, NULL, NULL, NULL, c.xid::text, c.tbl, c.row_key, c.kind, c.mask\(assigning ? ", NULL" : "")
            FROM \(PostgreSQLChangeLog.table) AS c
            WHERE c.xid >= $3::text::xid8 AND c.xid < pg_snapshot_xmax(pg_current_snapshot()) AND (c.xid >= $1::text::xid8 OR c.xid = ANY($2::text::xid8[]))
            ORDER BY 1 NULLS FIRST
            """
        }
        // The snapshot is the statement's, taken before the id is assigned: as in a commit
        // whose first write assigns it, the id is past every transaction the snapshot shows.
        lookSQL = look(assigning: false)
        signalledLookSQL = look(assigning: false, readingWholeCatalog: false)
        committingLookSQL = look(assigning: true)
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
    /// A repair's findings go back with it: a repair rolled back with its transaction is made
    /// again at the next look, and reports again what its batch said.
    struct Position {
        fileprivate var seen: Snapshot
        fileprivate var ownTransactions: Set<UInt64>
        fileprivate var installation: PostgreSQLChangeLog.Installation
        fileprivate var unfit: Set<Int>
        fileprivate var reported: [SchemaDifference]
    }

    var position: Position {
        Position(seen: seen, ownTransactions: ownTransactions, installation: installation, unfit: unfit, reported: reported)
    }

    func rewind(to position: Position) {
        seen = position.seen
        ownTransactions = position.ownTransactions
        installation = position.installation
        unfit = position.unfit
        reported = position.reported
        readsWholeCatalogNext = true
    }

    /// Reads the entries of the transactions that ended since the last look (those the last
    /// snapshot showed running or not yet begun, which this statement sees committed) and
    /// reloads their rows. Recording the horizon is left to ``recordIfDue(on:)``.
    ///
    /// Transactions commit in any order: one that began before another may end after it. The
    /// window is therefore not "entries past the last one read" but "entries of transactions
    /// the last look could not see", so that a commit is heard at the next look whatever else
    /// is still running, and once only.
    ///
    /// - Returns: What others committed; nil when no transaction ended since the last look.
    ///
    /// A look at a log whose tables are gone fails (``isLogGone(_:)``); one that finds the log's
    /// catalog changed sets ``needsRepair`` and reads nothing (the reader stays where it was):
    /// the entries are read once the repair has said which tables fit.
    ///
    /// - Parameters:
    ///   - inCommit: Whether the look is the first statement of a commit's transaction, which
    ///     it then gives its id (``lookTransaction``).
    ///   - answeringSignal: Whether the look answers a notification: it reads the triggers'
    ///     digest only, unless the last digest read differed from the installation's.
    func collect(on session: PostgresPipeline, inCommit: Bool = false, answeringSignal: Bool = false) throws -> ExternalChangeBatch? {
        var batch = ExternalChangeBatch()
        lookTransaction = nil
        let readsWholeCatalog = inCommit || !answeringSignal || needsRepair || readsWholeCatalogNext
        let rows = try session.rowsWaiting(
            inCommit ? committingLookSQL : readsWholeCatalog ? lookSQL : signalledLookSQL,
            [.text(String(seen.xmax)), .text("{\(seen.inProgress.map(String.init).joined(separator: ","))}"), .text(String(seen.xmin))], reused: true,
            doing: "reading the change log"
        )
        if inCommit, case .text(let text)? = rows.first?.last { lookTransaction = UInt64(text) }
        guard case .text(let snapshotText) = rows.first?[1], let now = Snapshot(snapshotText) else { return nil }
        needsRepair = rows.first?[3] != (readsWholeCatalog ? installation.catalog.fingerprint : installation.catalog.triggersFingerprint)
        guard !needsRepair else { return nil }
        if readsWholeCatalog { readsWholeCatalogNext = false }
        if case .text(let prunedText) = rows.first?[2], let pruned = UInt64(prunedText), pruned > horizon {
            // Entries this reader had not read were pruned: it was away too long.
            batch.resetTables = schemas.indices.filter { !unfit.contains($0) }
            move(to: now)
            recordsNow = true
            return batch
        }
        guard now != seen else { return nil }
        let entries = rows.dropFirst().compactMap { row -> ChangeLogEntries.Entry? in
            guard case .text(let xidText) = row[4], let xid = UInt64(xidText), !ownTransactions.contains(xid),
                  case .text(let name) = row[5], let table = tableIndexByName[name],
                  case .integer(let kind) = row[7], case .integer(let mask) = row[8]
            else { return nil }
            let key: SQLValue = if case .text(let keyText) = row[6] {
                PostgreSQLChangeLog.key(keyText, type: schemas[table].primaryKey.type)
            } else {
                .null
            }
            return ChangeLogEntries.Entry(table: table, key: key, kind: kind, mask: mask)
        }
        try merge(entries, into: &batch, on: session)
        move(to: now)
        return batch
    }

    /// Whether a look failed because the log's tables are gone (dropped by hand, or by a tool
    /// cleaning up): ``repair(on:)`` makes them again.
    static func isLogGone(_ error: any Error) -> Bool {
        PostgresErrors.sqlState(of: error) == "42P01"
    }

    /// Installs again, inside the caller's transaction, what of the log is gone or changed,
    /// and says what the store must hear of it: a reset of every table whose part of the log
    /// changed since it was installed (triggers dropped, disabled or made again, the function
    /// replaced, the table rebuilt; every table when the log was made again), which is also
    /// logged for the other stores; a reset of every table that fits its model again; and how
    /// the tables now differ from their models (or stay deaf: triggers disabled that only
    /// another role may enable), when that changed since it was last said.
    ///
    func repair(on session: PostgresPipeline) throws -> ExternalChangeBatch {
        var batch = ExternalChangeBatch()
        let doing = "installing the change log again"
        _ = try session.rowsWaiting("SELECT pg_advisory_xact_lock($1::bigint)", [.integer(PostgreSQLChangeLog.setupLock)], doing: doing)
        // The entries this transaction logs are the store's own.
        if case .text(let text) = try session.rowsWaiting("SELECT pg_current_xact_id()::text", doing: doing).first?.first, let xid = UInt64(text) {
            noteOwnTransaction(xid)
        }
        for statement in PostgreSQLChangeLog.createSQL {
            _ = try session.rowsWaiting(statement, doing: doing)
        }
        let catalogSQL = PostgreSQLChangeLog.catalogSQL(schemas)
        let found = PostgreSQLChangeLog.catalog(from: try session.rowsWaiting(catalogSQL, doing: doing), count: schemas.count)
        var catalog = found
        // A log made again holds none of the entries of the one before.
        var notLogged = catalog.logTable == installation.catalog.logTable
            ? Set(schemas.indices.filter { catalog.tables[$0].text != installation.catalog.tables[$0].text })
            : Set(schemas.indices)
        var layouts = installation.layouts
        var plans: [Int: PostgreSQLChangeLog.TablePlan] = [:]
        // A table to be reset is locked against writers until the repair commits: that waits
        // for the transactions writing to it, so that one that wrote while nothing logged it
        // has committed before the reload. (Its triggers were made again for that, which gave
        // them new row versions in the catalog every other store compares: each store's repair
        // set off the others', and two stores reset each other a few times a second, for good.)
        for table in notLogged.sorted() where !catalog.tables[table].columns.isEmpty {
            _ = try session.rowsWaiting("LOCK TABLE \(quoteIdentifier(schemas[table].name)) IN SHARE MODE", doing: "waiting for the writers of \(schemas[table].name)")
        }
        // Until the catalog read after the statements needs none: one that another connection
        // changed meanwhile is mended, and its table reset, too.
        for _ in 0..<4 {
            plans = Dictionary(uniqueKeysWithValues: schemas.indices.filter { !catalog.tables[$0].columns.isEmpty }.map {
                ($0, PostgreSQLChangeLog.plan(schemas[$0], state: catalog.tables[$0]))
            })
            let changing = plans.filter { !$0.value.statements.isEmpty }
            guard !changing.isEmpty else { break }
            for (table, plan) in changing.sorted(by: { $0.key < $1.key }) {
                for statement in plan.statements {
                    _ = try session.rowsWaiting(statement, doing: "installing the change log of \(schemas[table].name) again")
                }
            }
            catalog = PostgreSQLChangeLog.catalog(from: try session.rowsWaiting(catalogSQL, doing: doing), count: schemas.count)
        }
        for (table, plan) in plans { layouts[table] = plan.layout }
        // Changed by another connection meanwhile, even if back as it was: reset too.
        notLogged.formUnion(schemas.indices.filter { found.tables[$0].text != catalog.tables[$0].text })
        for table in notLogged.sorted() where !catalog.tables[table].columns.isEmpty {
            // Other stores may find the catalog as it should be: the reset reaches them through the log.
            _ = try session.rowsWaiting(
                "INSERT INTO \(PostgreSQLChangeLog.table) (tbl, row_key, kind, mask) VALUES ($1, NULL, \(ChangeLogEntries.tableReset), -1)",
                [.text(schemas[table].name)], doing: doing
            )
        }
        var differences: [SchemaDifference] = []
        for (table, schema) in schemas.enumerated() {
            differences += PostgreSQLSchema.differences(of: schema, catalog: catalog.tables[table].catalogColumns)
            if let disabled = plans[table]?.disabledTriggers, !disabled.isEmpty {
                let enabling = disabled.map { "ALTER TABLE \(quoteIdentifier(schema.name)) ENABLE ALWAYS TRIGGER \(quoteIdentifier($0))" }
                differences.append(SchemaDifference(
                    table: schema.name, column: nil,
                    problem: "the change log's triggers are disabled and only the table's owner may enable them; other connections' changes to it are not heard until the owner runs \(enabling.joined(separator: "; "))"
                ))
            }
        }
        if differences != reported { batch.schemaDifferences = differences }
        let nowUnfit = Set(differences.compactMap { tableIndexByName[$0.table] })
        // Heard again once it fits: what was committed meanwhile shows in the reload.
        batch.resetTables = notLogged.union(unfit).subtracting(nowUnfit).sorted()
        installation = PostgreSQLChangeLog.Installation(layouts: layouts, catalog: catalog)
        unfit = nowUnfit
        reported = differences
        needsRepair = false
        return batch
    }

    /// Merges entries per row and reloads the rows that are still there.
    /// The entries of a table that does not fit its model are left out: its rows cannot be read
    /// as the model's.
    func merge(_ entries: [ChangeLogEntries.Entry], into batch: inout ExternalChangeBatch, on session: PostgresPipeline) throws {
        let entries = entries.filter { !unfit.contains($0.table) }
        try ChangeLogEntries.merge(entries, schemas: schemas, layouts: installation.layouts, into: &batch) { table, keys in
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

    /// The current rows of a table by key, in model column order: one statement a table,
    /// prepared once (a watcher runs it after nearly every look).
    static func rows(of schema: TableSchema, keys: [SQLValue], on session: PostgresPipeline) throws -> [SQLValue: [SQLValue]] {
        guard !keys.isEmpty else { return [:] }
        let keyIndex = schema.primaryKeyIndex
        var found: [SQLValue: [SQLValue]] = [:]
        found.reserveCapacity(keys.count)
        let sql = "\(schema.selectSQL) WHERE \(quoteIdentifier(schema.primaryKey.name)) = ANY($1)"
        for start in stride(from: 0, to: keys.count, by: 1000) {
            let chunk = Array(keys[start..<min(start + 1000, keys.count)])
            for row in try session.rowsWaiting(sql, [PostgresValues.arrayLiteral(chunk)], reused: true, doing: "reading rows of \(schema.name)") {
                found[row[keyIndex]] = row
            }
        }
        return found
    }

    /// Records the horizon in the readers table and prunes the log below the slowest reader seen
    /// lately: at most once a second, or at once after a look found the log pruned past it. Not
    /// part of a look, so that what a look found reaches the store without waiting for it.
    func recordIfDue(on session: PostgresPipeline) throws {
        let now = ContinuousClock.now
        guard recordsNow || now - lastRecorded >= recordEvery else { return }
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
        lastRecorded = now
        recordsNow = false
    }

    /// Forgets this reader, so that the log is not kept for it (at close).
    func forget(on session: PostgresPipeline) {
        _ = try? session.rowsWaiting("DELETE FROM \(PostgreSQLChangeLog.readersTable) WHERE id = $1", [.text(id)], doing: "closing")
    }
}
