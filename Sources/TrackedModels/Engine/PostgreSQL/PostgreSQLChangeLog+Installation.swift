import Foundation

/// Installing the log's triggers, and noticing when they are gone or changed.
///
/// What the catalog holds of each table's part of the log (its columns, the store's trigger
/// function and triggers, whether the store's role owns the table) is read in one statement
/// (``stateSQL(_:)``); ``plan(_:state:)`` turns it into the statements that bring the table up
/// to date. A digest of the same rows and of the log tables' identities (``fingerprintSQL(_:)``)
/// is read at every look: when it differs from the one recorded at installation, something
/// was dropped, disabled, replaced or altered under the store, and it looks again closely.
extension PostgreSQLChangeLog {
    /// One table's part of the log, as the catalog holds it.
    struct TableState {
        /// The table's columns in catalog order with their types; none when the table is gone.
        var columns: [(name: String, type: String)] = []
        /// The source of the table's trigger function, if there is one.
        var functionSource: String?
        /// The store's triggers on the table by name, with when each fires: `A` (always), `O`
        /// (not in a session replaying changes), `D` (disabled), `R` (only there).
        var triggers: [String: String] = [:]
        /// Whether the store's role owns the table, and so may say when its triggers fire.
        var owned = false
    }

    /// The rows of every table's state, unordered: table index, what (1 a column, 2 a
    /// trigger, 3 the function, 4 ownership), position, name, detail.
    private static func stateRowsSQL(_ schemas: [TableSchema]) -> String {
        let tables = schemas.enumerated().map { index, schema in
            "(\(index), \(literal(schema.name)), \(literal(baseName(schema.name))))"
        }.joined(separator: ", ")
        return """
            SELECT t.n, s.what, s.ord, s.name, s.detail
            FROM (VALUES \(tables)) AS t(n, tbl, fn)
            CROSS JOIN LATERAL (
                SELECT 1 AS what, a.attnum::int AS ord, a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS detail
                FROM pg_attribute a WHERE a.attrelid = to_regclass(quote_ident(t.tbl)) AND a.attnum > 0 AND NOT a.attisdropped
                UNION ALL
                SELECT 2, 0, g.tgname::text, g.tgenabled::text FROM pg_trigger g
                WHERE g.tgrelid = to_regclass(quote_ident(t.tbl)) AND NOT g.tgisinternal AND g.tgname::text LIKE 'trackedmodels\\_%'
                UNION ALL
                SELECT 3, 0, p.prosrc, NULL FROM pg_proc p WHERE p.proname = t.fn
                UNION ALL
                SELECT 4, 0, pg_has_role(c.relowner, 'USAGE')::text, NULL FROM pg_class c WHERE c.oid = to_regclass(quote_ident(t.tbl))
            ) AS s
            """
    }

    /// Reads every table's state in one statement (see ``states(from:count:)``).
    static func stateSQL(_ schemas: [TableSchema]) -> String {
        stateRowsSQL(schemas) + " ORDER BY 1, 2, 3, 4"
    }

    /// A digest of every table's state and of which log tables exist, as an expression: it
    /// changes with any column, trigger, trigger function or log table dropped, made again or
    /// altered.
    static func fingerprintExpression(_ schemas: [TableSchema]) -> String {
        """
        md5(concat_ws('|', to_regclass('\(table)')::oid, to_regclass('\(stateTable)')::oid, to_regclass('\(readersTable)')::oid,
            (SELECT string_agg(concat_ws(',', n, what, ord, name, detail), ';' ORDER BY n, what, ord, name) FROM (\(stateRowsSQL(schemas))) AS state)))
        """
    }

    /// The log as installed: what a look compares the catalog with.
    struct Installation {
        /// How each table's entries name its columns.
        var layouts: [ChangeLogEntries.Layout]
        /// ``fingerprintExpression(_:)`` right after installing.
        var fingerprint: SQLValue
        /// The log table's identity (`oid`): another one is a log made again, which has lost
        /// the entries of the one before.
        var logTable: SQLValue

        /// One row: the fingerprint, and the log table's identity.
        static func sql(_ schemas: [TableSchema]) -> String {
            "SELECT \(fingerprintExpression(schemas)), to_regclass('\(table)')::oid::text"
        }

        init(layouts: [ChangeLogEntries.Layout], row: [SQLValue]?) {
            self.layouts = layouts
            fingerprint = row?[0] ?? .null
            logTable = row?[1] ?? .null
        }
    }

    /// Every table's state from the rows of ``stateSQL(_:)``.
    static func states(from rows: [[SQLValue]], count: Int) -> [TableState] {
        var states = Array(repeating: TableState(), count: count)
        for row in rows {
            guard case .integer(let table) = row[0], states.indices.contains(Int(table)), case .integer(let what) = row[1], case .text(let name) = row[3] else { continue }
            let detail: String? = if case .text(let detail) = row[4] { detail } else { nil }
            switch what {
            case 1: states[Int(table)].columns.append((name, detail ?? ""))
            case 2: states[Int(table)].triggers[name] = detail
            case 3: states[Int(table)].functionSource = name
            default: states[Int(table)].owned = name == "true"
            }
        }
        return states
    }

    /// What brings one table's part of the log up to date.
    struct TablePlan {
        /// The statements to run, in order: the function where missing or different, the store's
        /// triggers of other versions dropped, missing triggers created and made to fire always.
        var statements: [String]
        /// How the table's log entries name its columns, once the statements ran.
        var layout: ChangeLogEntries.Layout
        /// Whether the table's commits were being logged: both triggers fire and run the
        /// function wanted for its columns. A table that was not must be reloaded as a whole.
        var wasLogging: Bool
        /// The store's triggers that stay disabled once the statements ran: only the table's
        /// owner, another role, may enable them.
        var disabledTriggers: [String]
        /// Whether its commits are logged once the statements ran.
        var isLogging: Bool { disabledTriggers.isEmpty }
    }

    /// The statements that bring a table's function and triggers up to date with its columns.
    static func plan(_ schema: TableSchema, state: TableState) -> TablePlan {
        let wanted = triggers(table: schema.name, columns: state.columns, primaryKey: schema.primaryKey.name)
        var statements: [String] = []
        if state.functionSource != wanted.functionBody { statements.append(createFunctionSQL(wanted)) }
        for name in state.triggers.keys.sorted() where wanted.triggers[name] == nil {
            statements.append("DROP TRIGGER \(quoteIdentifier(name)) ON \(quoteIdentifier(schema.name))")
        }
        // Only the table's owner may say when its triggers fire; another role that may create
        // them leaves them as created.
        for (name, sql) in wanted.triggers.sorted(by: { $0.key < $1.key }) where state.triggers[name] != "A" {
            if state.triggers[name] == nil { statements.append(sql) }
            // Firing also in a session with `session_replication_role = replica` (pg_restore,
            // logical replication's apply), which ordinary triggers sleep through.
            if state.owned { statements.append("ALTER TABLE \(quoteIdentifier(schema.name)) ENABLE ALWAYS TRIGGER \(quoteIdentifier(name))") }
        }
        let fired = wanted.triggers.keys.allSatisfy { ["A", "O"].contains(state.triggers[$0]) }
        return TablePlan(
            statements: statements,
            layout: ChangeLogEntries.Layout(modelColumns: state.columns.map { schema.columnIndex(named: $0.name) }),
            wasLogging: fired && state.functionSource == wanted.functionBody,
            disabledTriggers: state.owned ? [] : wanted.triggers.keys.filter { ["D", "R"].contains(state.triggers[$0]) }.sorted()
        )
    }

    private static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
