import Foundation

/// Installing the log's triggers, and noticing when they are gone or changed.
///
/// What the catalog holds of each table's part of the log (its columns as the model check reads
/// them, the store's trigger function and triggers, whether the store's role owns the table,
/// and the identity and row version of each) is read in one statement (``catalogSQL(_:)``);
/// ``plan(_:state:)`` turns a table's part into the statements that bring it up to date. A
/// digest of the same rows and of the log tables' identities (``fingerprintExpression(_:)``),
/// or at a look that answers the log's notification a digest of the tables', triggers' and
/// functions' row versions alone (``triggersFingerprintExpression(_:)``), is read at every
/// look: when it differs from the one recorded at installation, something was dropped,
/// disabled, replaced, made again or altered under the store, and the reader looks closely
/// (``PostgreSQLChangeLogReader/repair(on:)``).
extension PostgreSQLChangeLog {
    /// One table's part of the log, as the catalog holds it.
    struct TableState {
        /// The table's columns in catalog order with their types; none when the table is gone.
        var columns: [(name: String, type: String)] = []
        /// The columns as ``PostgreSQLSchema/columnsSQL`` reads them, for the model check.
        var catalogColumns: [[SQLValue]] = []
        /// The source of the table's trigger function, if there is one.
        var functionSource: String?
        /// The store's triggers on the table by name, with when each fires: `A` (always), `O`
        /// (not in a session replaying changes), `D` (disabled), `R` (only there); followed by
        /// `*` where the trigger is not the one the store makes (another function, other
        /// events, a `WHEN` condition or an `UPDATE OF` list).
        var triggers: [String: String] = [:]
        /// Whether the store's role owns the table, and so may say when its triggers fire.
        var owned = false
        /// Everything read of the table's part, row versions included: another text means
        /// something was changed, or dropped and made again, since it was read.
        var text = ""
    }

    /// The catalog as one statement read it.
    struct Catalog {
        var tables: [TableState]
        /// ``fingerprintExpression(_:)``.
        var fingerprint: SQLValue
        /// ``triggersFingerprintExpression(_:)``.
        var triggersFingerprint: SQLValue
        /// The log table's identity (`oid`): another one is a log made again, which holds none
        /// of the entries of the one before.
        var logTable: SQLValue
    }

    /// The rows of every table's state, unordered: table index, what (1 a column, 2 a
    /// trigger, 3 the function, 4 the table), position, name, detail, and identities and row
    /// versions (for a column, whether it is nullable, has a default, is in the primary key,
    /// is generated always).
    private static func stateRowsSQL(_ schemas: [TableSchema]) -> String {
        let tables = schemas.enumerated().map { index, schema in
            "(\(index), \(quoteLiteral(schema.name)), \(quoteLiteral(baseName(schema.name))))"
        }
        // No tables: a list of none, typed.
        let list = tables.isEmpty ? "SELECT NULL::int, NULL::text, NULL::text WHERE false" : "VALUES \(tables.joined(separator: ", "))"
        return """
            SELECT t.n, s.what, s.ord, s.name, s.detail, s.extra
            FROM (\(list)) AS t(n, tbl, fn)
            CROSS JOIN LATERAL (
                SELECT 1 AS what, a.attnum::int AS ord, a.attname::text AS name, format_type(a.atttypid, a.atttypmod) AS detail,
                    concat_ws(',', NOT a.attnotnull, a.atthasdef OR a.attidentity <> '', coalesce(a.attnum = ANY(i.indkey), false), a.attidentity = 'a') AS extra
                FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
                WHERE a.attrelid = to_regclass(quote_ident(t.tbl)) AND a.attnum > 0 AND NOT a.attisdropped
                UNION ALL
                SELECT 2, 0, g.tgname::text,
                    g.tgenabled::text || CASE WHEN g.tgfoid = to_regprocedure(quote_ident(t.fn) || '()') AND g.tgqual IS NULL
                        AND cardinality(g.tgattr::int2[]) = 0 AND g.tgtype = CASE WHEN g.tgname::text = t.fn THEN 29 ELSE 32 END THEN '' ELSE '*' END,
                    concat_ws(',', g.oid, g.xmin) FROM pg_trigger g
                WHERE g.tgrelid = to_regclass(quote_ident(t.tbl)) AND NOT g.tgisinternal AND g.tgname::text LIKE 'trackedmodels\\_%'
                UNION ALL
                SELECT 3, 0, p.prosrc, NULL, concat_ws(',', p.oid, p.xmin) FROM pg_proc p WHERE p.oid = to_regprocedure(quote_ident(t.fn) || '()')
                UNION ALL
                SELECT 4, 0, pg_has_role(c.relowner, 'USAGE')::text, NULL, c.oid::text FROM pg_class c WHERE c.oid = to_regclass(quote_ident(t.tbl))
            ) AS s
            """
    }

    /// A digest of every table's state and of which log tables exist, as an expression: it
    /// changes with any column, trigger, trigger function or log table dropped, made again,
    /// replaced or altered. (A function's source is left out: replacing it changes its row
    /// version, and hashing it at every look would cost more than the rest.)
    static func fingerprintExpression(_ schemas: [TableSchema]) -> String {
        """
        md5(concat_ws('|', to_regclass('\(table)')::oid, to_regclass('\(stateTable)')::oid, to_regclass('\(readersTable)')::oid,
            (SELECT string_agg(concat_ws(',', n, what, ord, CASE WHEN what = 3 THEN NULL ELSE name END, detail, extra), ';' ORDER BY n, what, ord, name)
             FROM (\(stateRowsSQL(schemas))) AS state)))
        """
    }

    /// A digest of the log tables' identities and of the identity and row version of the
    /// tracked tables, the store's triggers on them and their functions: index lookups, a fifth
    /// of the cost of ``fingerprintExpression(_:)`` (0.04 against 0.23 ms a look, prepared, on
    /// this machine). It changes with a trigger dropped, disabled, enabled or made again, a
    /// function replaced (another store's repair among them, which may lay the column mask out
    /// anew), a table made again, renamed, rewritten (a column retyped to another storage) or
    /// given a column, a log table dropped; not with a column renamed or dropped, retyped in
    /// place (`varchar(10)` to `text`), or its `NOT NULL` changed.
    static func triggersFingerprintExpression(_ schemas: [TableSchema]) -> String {
        let tables = schemas.map { "to_regclass(quote_ident(\(quoteLiteral($0.name))))" }.joined(separator: ", ")
        let functions = schemas.map { "to_regprocedure(quote_ident(\(quoteLiteral(baseName($0.name)))) || '()')" }.joined(separator: ", ")
        let versions = schemas.isEmpty ? "" : """
            ,
                (SELECT string_agg(concat_ws(',', c.oid, c.xmin), ';' ORDER BY c.oid) FROM pg_class c WHERE c.oid IN (\(tables))),
                (SELECT string_agg(concat_ws(',', g.tgrelid, g.oid, g.xmin), ';' ORDER BY g.oid) FROM pg_trigger g
                 WHERE g.tgrelid IN (\(tables)) AND NOT g.tgisinternal AND g.tgname::text LIKE 'trackedmodels\\_%'),
                (SELECT string_agg(concat_ws(',', p.oid, p.xmin), ';' ORDER BY p.oid) FROM pg_proc p WHERE p.oid IN (\(functions)))
            """
        return """
            md5(concat_ws('|', to_regclass('\(table)')::oid, to_regclass('\(stateTable)')::oid, to_regclass('\(readersTable)')::oid\(versions)))
            """
    }

    /// Reads the catalog in one statement (see ``catalog(from:count:)``).
    static func catalogSQL(_ schemas: [TableSchema]) -> String {
        """
        WITH now AS (
            SELECT \(fingerprintExpression(schemas)) AS fingerprint, to_regclass('\(table)')::oid::text AS log,
                \(triggersFingerprintExpression(schemas)) AS triggers
        )
        SELECT now.fingerprint, now.log, state.*, now.triggers FROM now LEFT JOIN (\(stateRowsSQL(schemas))) AS state ON true
        ORDER BY 3, 4, 5, 6
        """
    }

    /// The catalog from the rows of ``catalogSQL(_:)``.
    static func catalog(from rows: [[SQLValue]], count: Int) -> Catalog {
        var states = Array(repeating: TableState(), count: count)
        for row in rows {
            guard case .integer(let table) = row[2], states.indices.contains(Int(table)), case .integer(let what) = row[3], case .text(let name) = row[5] else { continue }
            let detail: String? = if case .text(let detail) = row[6] { detail } else { nil }
            let extra: String = if case .text(let extra) = row[7] { extra } else { "" }
            var state = states[Int(table)]
            state.text += "\(what),\(row[4]),\(name),\(detail ?? "-"),\(extra);"
            switch what {
            case 1:
                state.columns.append((name, detail ?? ""))
                let flags = extra.split(separator: ",").map { SQLValue.integer($0 == "t" ? 1 : 0) }
                state.catalogColumns.append([.text(name), .text(detail ?? "")] + flags)
            case 2: state.triggers[name] = detail
            case 3: state.functionSource = name
            default: state.owned = name == "true"
            }
            states[Int(table)] = state
        }
        return Catalog(tables: states, fingerprint: rows.first?[0] ?? .null, triggersFingerprint: rows.first?.last ?? .null, logTable: rows.first?[1] ?? .null)
    }

    /// The log as installed: what a look compares the catalog with.
    struct Installation {
        /// How each table's entries name its columns.
        var layouts: [ChangeLogEntries.Layout]
        /// The catalog right after installing.
        var catalog: Catalog
    }

    /// What brings one table's part of the log up to date.
    struct TablePlan {
        /// The statements to run, in order: the function where missing or different, the store's
        /// triggers of other versions dropped, missing triggers created and made to fire always.
        var statements: [String]
        /// How the table's log entries name its columns, once the statements ran.
        var layout: ChangeLogEntries.Layout
        /// The store's triggers that stay disabled once the statements ran: only the table's
        /// owner, another role, may enable them.
        var disabledTriggers: [String]
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
            // `CREATE OR REPLACE`: one of that name that is not the store's is replaced.
            let remade = state.triggers[name].map { $0.hasSuffix("*") } ?? true
            if remade { statements.append(sql) }
            // Firing also in a session with `session_replication_role = replica` (pg_restore,
            // logical replication's apply), which ordinary triggers sleep through.
            if state.owned, remade || state.triggers[name] != "A" {
                statements.append("ALTER TABLE \(quoteIdentifier(schema.name)) ENABLE ALWAYS TRIGGER \(quoteIdentifier(name))")
            }
        }
        return TablePlan(
            statements: statements,
            layout: ChangeLogEntries.Layout(modelColumns: state.columns.map { schema.columnIndex(named: $0.name) }),
            disabledTriggers: state.owned ? [] : wanted.triggers.keys.filter { name in state.triggers[name].map { $0.hasPrefix("D") || $0.hasPrefix("R") } ?? false }.sorted()
        )
    }
}
