import Foundation

/// The PostgreSQL change log: a trigger on each tracked table appends (transaction, table, row,
/// kind, changed-column mask) to `trackedmodels_changes` inside the writing transaction,
/// whoever writes (another store, `modelctl`, `psql`), and rings a payload-less `NOTIFY`
/// doorbell, which PostgreSQL sends once per transaction however many rows it wrote.
///
/// Readers never rely on a notification (one sent while a listener is disconnected is gone):
/// each keeps the snapshot of its last look (`pg_current_snapshot()`: which transactions had
/// ended then) and next reads the entries of the transactions that snapshot could not see
/// (those then running or not yet begun) which have committed since. Sequence numbers are
/// taken at insert, not at commit, so a reader that took `seq > last` would skip a
/// transaction that commits after a younger one; and a reader that waited for every older
/// transaction to end (`xmin`) would hear nothing while one long transaction stays open.
/// Tracking snapshots, each entry is read exactly once, at the first look after its commit,
/// whatever order transactions commit in.
///
/// The triggers fire on every row `COPY` and `INSERT … ON CONFLICT` write (an UPSERT's update
/// is an update), and they are enabled `ALWAYS`: also in a session with
/// `session_replication_role = replica` (`pg_restore`, logical replication's apply), which
/// ordinary triggers sleep through.
///
/// Each reader's horizon is the oldest transaction running at its last look: every entry
/// below it has been read. It records the horizon in `trackedmodels_readers`; the log is
/// pruned below the slowest reader seen lately, and a reader that fell behind the pruning (it
/// was away longer) reloads its tables.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/functions-info.html#FUNCTIONS-PG-SNAPSHOT>,
/// <https://www.postgresql.org/docs/current/sql-notify.html>, <https://www.postgresql.org/docs/current/plpgsql-trigger.html>
enum PostgreSQLChangeLog {
    static let version = 1
    static let table = "trackedmodels_changes"
    static let readersTable = "trackedmodels_readers"
    static let stateTable = "trackedmodels_changes_state"
    /// The channel the triggers notify.
    static let channel = "trackedmodels_changes"
    /// The advisory lock every store takes while it sets a database up, so that two opening at
    /// once do not race to create the same table, function or trigger.
    static let setupLock: Int64 = 0x7472_6163_6B65_64

    static let createSQL = [
        """
        CREATE TABLE IF NOT EXISTS \(table) (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            xid XID8 NOT NULL DEFAULT pg_current_xact_id(),
            tbl TEXT NOT NULL, row_key TEXT, kind SMALLINT NOT NULL, mask BIGINT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS \(table)_by_xid ON \(table) (xid)",
        "CREATE TABLE IF NOT EXISTS \(readersTable) (id TEXT PRIMARY KEY, horizon XID8 NOT NULL, seen TIMESTAMPTZ NOT NULL DEFAULT now())",
        "CREATE TABLE IF NOT EXISTS \(stateTable) (id INTEGER PRIMARY KEY CHECK (id = 1), pruned_below XID8 NOT NULL)",
        "INSERT INTO \(stateTable) (id, pruned_below) VALUES (1, '0') ON CONFLICT DO NOTHING",
    ]

    /// A table's trigger function and triggers, generated from its real columns (in catalog
    /// order, each a bit of the mask).
    struct Triggers {
        var functionName: String
        var functionBody: String
        /// The triggers by name, with their `CREATE OR REPLACE` statements.
        var triggers: [String: String]
    }

    /// - Parameter columns: The table's columns in catalog order, with their types (as
    ///   `format_type` names them): a type without an equality operator (`json`, `xml`, the
    ///   geometric ones) is compared as text.
    static func triggers(table: String, columns: [(name: String, type: String)], primaryKey: String) -> Triggers {
        let base = baseName(table)
        let functionName = quoteIdentifier(base)
        let tableLiteral = quoteLiteral(table)
        let key = quoteIdentifier(primaryKey)
        let mask = columns.count > ChangeLogEntries.Layout.maskWidth
            ? "-1"
            : columns.enumerated().map { bit, column in
                let cast = typesWithoutEquality.contains(column.type) ? "::text" : ""
                let name = quoteIdentifier(column.name)
                return "(CASE WHEN OLD.\(name)\(cast) IS DISTINCT FROM NEW.\(name)\(cast) THEN \(Int64(1) << Int64(bit)) ELSE 0 END)"
            }.joined(separator: " | ")
        func log(_ row: String, _ kind: ChangeLogEntries.Kind, _ mask: String) -> String {
            "INSERT INTO \(Self.table) (tbl, row_key, kind, mask) VALUES (\(tableLiteral), \(row).\(key)::text, \(kind.rawValue), \(mask));"
        }
        // A changed primary key is another row: the old one is gone, the new one arrives.
        let body = """

            DECLARE changed BIGINT;
            BEGIN
                IF TG_OP = 'TRUNCATE' THEN
                    INSERT INTO \(Self.table) (tbl, row_key, kind, mask) VALUES (\(tableLiteral), NULL, \(ChangeLogEntries.tableReset), -1);
                ELSIF TG_OP = 'INSERT' THEN
                    \(log("NEW", .insert, "-1"))
                ELSIF TG_OP = 'DELETE' THEN
                    \(log("OLD", .delete, "-1"))
                ELSIF OLD.\(key) IS DISTINCT FROM NEW.\(key) THEN
                    \(log("OLD", .delete, "-1"))
                    \(log("NEW", .insert, "-1"))
                ELSE
                    changed := \(mask);
                    IF changed = 0 THEN RETURN NULL; END IF;
                    \(log("NEW", .update, "changed"))
                END IF;
                PERFORM pg_notify('\(channel)', '');
                RETURN NULL;
            END;

            """
        let rowTrigger = quoteIdentifier(base)
        let truncateTrigger = quoteIdentifier("\(base)_truncate")
        return Triggers(
            functionName: base,
            functionBody: body,
            triggers: [
                base: "CREATE OR REPLACE TRIGGER \(rowTrigger) AFTER INSERT OR UPDATE OR DELETE ON \(quoteIdentifier(table)) FOR EACH ROW EXECUTE FUNCTION \(functionName)()",
                "\(base)_truncate": "CREATE OR REPLACE TRIGGER \(truncateTrigger) AFTER TRUNCATE ON \(quoteIdentifier(table)) FOR EACH STATEMENT EXECUTE FUNCTION \(functionName)()",
            ]
        )
    }

    /// Types PostgreSQL cannot compare with `=`.
    private static let typesWithoutEquality: Set<String> = ["json", "xml", "point", "line", "lseg", "box", "path", "polygon", "circle"]

    /// The name of a table's function and row trigger: `trackedmodels_<table>_v<version>`, or,
    /// for a table whose name would not fit PostgreSQL's 63 bytes with the truncate trigger's
    /// suffix, its first 20 bytes (whole Unicode scalars) and a hash of the whole name.
    static func baseName(_ table: String) -> String {
        let name = "trackedmodels_\(table)_v\(version)"
        guard name.utf8.count + "_truncate".utf8.count > 63 else { return name }
        // FNV-1a: stable across processes and runs, unlike Swift's Hasher.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in table.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        // Counted in bytes, as PostgreSQL counts a name: 20 characters of Cyrillic are 40
        // bytes, past which the truncate trigger's name, cut at 63, became the row trigger's.
        var prefix = String.UnicodeScalarView()
        var bytes = 0
        for scalar in table.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= 20 else { break }
            prefix.append(scalar)
        }
        return "trackedmodels_\(String(prefix))_\(String(hash, radix: 16))_v\(version)"
    }

    static func createFunctionSQL(_ triggers: Triggers) -> String {
        "CREATE OR REPLACE FUNCTION \(quoteIdentifier(triggers.functionName))() RETURNS trigger LANGUAGE plpgsql AS $trackedmodels$\(triggers.functionBody)$trackedmodels$"
    }

    /// A log key, as the trigger wrote it (`::text`), as the value of the table's key column.
    static func key(_ text: String, type: ColumnType) -> SQLValue {
        switch type {
        case .integer: Int64(text).map(SQLValue.integer) ?? .text(text)
        case .real: Double(text).map(SQLValue.real) ?? .text(text)
        case .text: .text(text)
        case .blob: PostgresValues.bytes(fromHex: text).map(SQLValue.blob) ?? .text(text)
        }
    }
}
