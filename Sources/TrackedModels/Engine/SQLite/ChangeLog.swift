import Foundation

/// The change log: triggers on tracked tables append (table, row, kind, changed-column mask) to
/// `trackedmodels_changes` inside the writing transaction, whoever writes (another store,
/// `modelctl`, the `sqlite3` shell).
///
/// `seq` is a plain rowid (AUTOINCREMENT would cost a `sqlite_sequence` write per logged row):
/// pruning always keeps the newest entry, so numbers never go back, and a reader that finds
/// the log emptied by hand resets.
///
/// Rows SQLite deletes to resolve a conflict (`INSERT OR REPLACE`, `REPLACE`, `UPDATE OR
/// REPLACE`, a constraint declared `ON CONFLICT REPLACE`) fire no delete trigger unless the
/// writing connection turned on `recursive_triggers`, which other programs need not do. So
/// BEFORE triggers log every row an insert or an update of a key or a unique column may
/// conflict with, as "look again": readers hear such a row deleted if it went, and nothing if
/// it is still there. (A unique index on an expression cannot be matched in a trigger: a
/// write that may conflict with it logs a reset of the table.)
///
/// Triggers are named `trackedmodels_<table>_<kind>_v<version>` and generated from the table's
/// real columns and unique indexes, so every store on a file installs the same ones.
/// Installing is idempotent: a trigger whose SQL differs (an older version, or a table that
/// gained columns) is replaced.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_createtrigger.html>
enum ChangeLog {
    static let version = 2
    static let table = "trackedmodels_changes"
    static let stateTable = "trackedmodels_changes_state"

    typealias Kind = ChangeLogEntries.Kind

    /// Runs `body`, which inserts rows in bulk inside the caller's write transaction, with the
    /// table's insert trigger dropped; then creates the trigger again as it was and logs one
    /// reset of the table. Other stores reload the table once instead of reading one entry per
    /// row, and the bulk insert writes no log rows. (DDL is transactional in SQLite: no other
    /// connection ever sees the table without its trigger.)
    static func insertingInBulk(into table: String, on connection: Connection, _ body: () throws -> Void) throws {
        // (The plain inserts of a bulk insert replace nothing: a conflict fails it whole.)
        var definitions: [String] = []
        for kind in ["insert", "insertreplaces"] {
            let name = triggerName(table: table, kind: kind)
            guard case .text(let definition) = try connection.scalar("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", [.text(name)]) else { continue }
            try connection.execute("DROP TRIGGER \(quoteIdentifier(name))")
            definitions.append(definition)
        }
        guard !definitions.isEmpty else {
            try body()  // nobody keeps a log of this file
            return
        }
        try body()
        for definition in definitions { try connection.execute(definition) }
        try connection.cachedStatement("INSERT INTO \(Self.table) (tbl, row_key, kind, mask) VALUES (?, NULL, ?, -1)")
            .run([.text(table), .integer(ChangeLogEntries.tableReset)])
    }

    /// A trigger's name: `trackedmodels_<table>_<kind>_v<version>`.
    private static func triggerName(table: String, kind: String) -> String {
        "trackedmodels_\(table)_\(kind)_v\(version)"
    }

    /// Creates the log and the triggers of each table when missing or out of date.
    static func install(on connection: Connection, schemas: [TableSchema]) throws -> [ChangeLogEntries.Layout] {
        try connection.withTransaction(.immediate) {
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS \(table) (
                    seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, row_key, kind INTEGER NOT NULL, mask INTEGER NOT NULL
                );
                CREATE TABLE IF NOT EXISTS \(stateTable) (id INTEGER PRIMARY KEY CHECK (id = 1), pruned_through INTEGER NOT NULL);
                INSERT OR IGNORE INTO \(stateTable) (id, pruned_through) VALUES (1, 0);
                """)
            return try schemas.map { schema in
                // A table dropped under the store has nothing to log (it is reported missing).
                guard try tableExists(schema.name, on: connection) else { return ChangeLogEntries.Layout(modelColumns: []) }
                let (wanted, layout) = try wantedTriggers(of: schema, on: connection)
                let existing = try installedTriggers(of: schema, on: connection)
                for (name, sql) in existing where wanted[name] != sql {
                    try connection.execute("DROP TRIGGER \(quoteIdentifier(name))")
                }
                for (name, sql) in wanted.sorted(by: { $0.key < $1.key }) where existing[name] != sql {
                    guard case .text(let sql) = sql else { continue }
                    try connection.execute(sql)
                }
                return layout
            }
        }
    }

    /// The tables whose changes the log would not hear as it should: their triggers are missing
    /// or not the ones their columns and unique indexes call for (dropped by hand, or by a tool
    /// that rebuilt the table), or every table, when the log itself is gone. ``install(on:schemas:)``
    /// mends them.
    static func tablesNotLogged(_ schemas: [TableSchema], on connection: Connection) throws -> [Int] {
        guard try isInstalled(on: connection) else { return Array(schemas.indices) }
        return try schemas.indices.filter { index in
            try tableExists(schemas[index].name, on: connection)
                && wantedTriggers(of: schemas[index], on: connection).triggers != installedTriggers(of: schemas[index], on: connection)
        }
    }

    private static func tableExists(_ name: String, on connection: Connection) throws -> Bool {
        try connection.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]) == .integer(1)
    }

    /// Whether the log's tables are there.
    static func isInstalled(on connection: Connection) throws -> Bool {
        try connection.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", [.text(table), .text(stateTable)]) == .integer(2)
    }

    /// Whether the log's table of entries is there.
    static func hasEntries(on connection: Connection) throws -> Bool {
        try connection.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]) == .integer(1)
    }

    /// Which model column each bit of each table's masks stands for, as the tables are now.
    static func layouts(of schemas: [TableSchema], on connection: Connection) throws -> [ChangeLogEntries.Layout] {
        try schemas.map { try wantedTriggers(of: $0, on: connection).layout }
    }

    /// The triggers a table calls for, by name, and which model column each bit of their
    /// masks stands for.
    private static func wantedTriggers(of schema: TableSchema, on connection: Connection) throws -> (triggers: [String: SQLValue], layout: ChangeLogEntries.Layout) {
        let columns = try connection.makeStatement("SELECT name FROM pragma_table_info(?) ORDER BY cid")
            .rows([.text(schema.name)]).compactMap { row -> String? in
                if case .text(let name) = row[0] { name } else { nil }
            }
        let unique = try uniqueIndexes(of: schema.name, on: connection)
        return (
            triggers(table: schema.name, columns: columns, primaryKey: schema.primaryKey.name, uniqueIndexes: unique),
            ChangeLogEntries.Layout(modelColumns: columns.map { schema.columnIndex(named: $0) })
        )
    }

    /// The log's triggers a table has, by name.
    private static func installedTriggers(of schema: TableSchema, on connection: Connection) throws -> [String: SQLValue] {
        try connection.makeStatement("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND name LIKE 'trackedmodels\\_%' ESCAPE '\\'")
            .rows([.text(schema.name)])
            .reduce(into: [:]) { installed, row in if case .text(let name) = row[0] { installed[name] = row[1] } }
    }

    /// A unique index: its columns, each with the collation it compares by, and the condition
    /// of a partial index (`WHERE …`, as declared).
    struct UniqueIndex {
        var columns: [(name: String, collation: String)]
        var condition: String?
    }

    /// The unique indexes of `table` but its primary key's; nil when one of them indexes an
    /// expression.
    private static func uniqueIndexes(of table: String, on connection: Connection) throws -> [UniqueIndex]? {
        let listed = try connection.makeStatement("SELECT name, partial FROM pragma_index_list(?) WHERE \"unique\" = 1 AND origin <> 'pk' ORDER BY name")
            .rows([.text(table)])
        var indexes: [UniqueIndex] = []
        for row in listed {
            guard case .text(let name) = row[0] else { continue }
            var index = UniqueIndex(columns: [], condition: nil)
            for column in try connection.makeStatement("SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno").rows([.text(name)]) {
                guard case .text(let columnName) = column[1], case .text(let collation) = column[2] else { return nil }
                index.columns.append((columnName, collation))
            }
            if row[1] == .integer(1) {
                guard case .text(let sql) = try connection.scalar("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", [.text(name)]),
                      let condition = partialCondition(of: sql)
                else { return nil }
                index.condition = condition
            }
            indexes.append(index)
        }
        return indexes
    }

    /// The condition of a partial index, from its `CREATE INDEX` statement: what follows the
    /// column list after `WHERE`. Quoted text and identifiers are skipped while the list's
    /// parentheses are matched.
    static func partialCondition(of sql: String) -> String? {
        // By scalar: a quote that a combining mark follows is one `Character`, not a quote.
        let characters = Array(sql.unicodeScalars)
        var index = 0, depth = 0
        var quote: Unicode.Scalar?
        var listEnd: Int?
        while index < characters.count, listEnd == nil {
            let character = characters[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if "'\"`[".unicodeScalars.contains(character) {
                quote = character == "[" ? "]" : character
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth -= 1
                if depth == 0 { listEnd = index }
            }
            index += 1
        }
        guard let listEnd else { return nil }
        let rest = String(String.UnicodeScalarView(characters[(listEnd + 1)...])).trimmingCharacters(in: .whitespacesAndNewlines)
        guard rest.prefix(5).uppercased() == "WHERE", rest.count > 5, rest[rest.index(rest.startIndex, offsetBy: 5)].isWhitespace else { return nil }
        return String(rest.dropFirst(5)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The triggers of a table, by name.
    private static func triggers(table: String, columns: [String], primaryKey: String, uniqueIndexes: [UniqueIndex]?) -> [String: SQLValue] {
        let quotedTable = quoteIdentifier(table)
        let tableLiteral = quoteLiteral(table)
        let key = quoteIdentifier(primaryKey)
        // Compared byte for byte: a column's own collation (NOCASE, RTRIM) would take 'o' to
        // 'O' for no change at all.
        let differences = columns.map { "OLD.\(quoteIdentifier($0)) IS NOT NEW.\(quoteIdentifier($0)) COLLATE BINARY" }
        let mask = columns.count > ChangeLogEntries.Layout.maskWidth
            ? "-1"
            : differences.enumerated().map { bit, difference in bit == 0 ? "(\(difference))" : "((\(difference)) << \(bit))" }
                .joined(separator: " | ")
        func name(_ kind: String) -> String { triggerName(table: table, kind: kind) }
        func insert(_ keyValue: String, _ kind: Kind, _ mask: String) -> String {
            "INSERT INTO \(Self.table) (tbl, row_key, kind, mask) VALUES (\(tableLiteral), \(keyValue), \(kind.rawValue), \(mask));"
        }
        // The rows a write may replace, logged before it: those holding its key (another row's,
        // for an update), and those holding its values of a unique index.
        let qualifiedKey = "\(quotedTable).\(key)"
        func lookAgain(where condition: String) -> String {
            "INSERT INTO \(Self.table) (tbl, row_key, kind, mask) SELECT \(tableLiteral), \(qualifiedKey), \(Kind.lookAgain.rawValue), 0 FROM \(quotedTable) WHERE \(condition);"
        }
        // (A partial index's condition names the rows of the table the trigger reads.)
        func sameValues(_ index: UniqueIndex) -> String {
            index.columns.map { "\(quotedTable).\(quoteIdentifier($0.name)) = NEW.\(quoteIdentifier($0.name)) COLLATE \(quoteIdentifier($0.collation))" }
                .joined(separator: " AND ") + (index.condition.map { " AND (\($0))" } ?? "")
        }
        let reset = "INSERT INTO \(Self.table) (tbl, row_key, kind, mask) VALUES (\(tableLiteral), NULL, \(ChangeLogEntries.tableReset), -1);"
        let insertReplaces = [lookAgain(where: "\(qualifiedKey) = NEW.\(key)")]
            + (uniqueIndexes.map { $0.map { lookAgain(where: sameValues($0)) } } ?? [reset])
        let updateReplaces = [lookAgain(where: "\(qualifiedKey) = NEW.\(key) AND NEW.\(key) IS NOT OLD.\(key)")]
            + (uniqueIndexes.map { $0.map { lookAgain(where: "\(sameValues($0)) AND \(qualifiedKey) IS NOT OLD.\(key)") } } ?? [reset])
        // Only writes of the key or of an indexed column can replace a row (an index on an
        // expression, or a partial one, whose condition may name any column: any column).
        let replacing = uniqueIndexes.flatMap { indexes in indexes.allSatisfy { $0.condition == nil } ? [primaryKey] + indexes.flatMap { $0.columns.map(\.name) } : nil } ?? columns
        let updatedColumns = replacing.enumerated().filter { !replacing.prefix($0.offset).contains($0.element) }
            .map { quoteIdentifier($0.element) }.joined(separator: ", ")
        // A changed primary key is another row: the old one is gone, the new one arrives.
        return [
            name("insertreplaces"): .text("CREATE TRIGGER \(quoteIdentifier(name("insertreplaces"))) BEFORE INSERT ON \(quotedTable) BEGIN \(insertReplaces.joined(separator: " ")) END"),
            name("updatereplaces"): .text("CREATE TRIGGER \(quoteIdentifier(name("updatereplaces"))) BEFORE UPDATE OF \(updatedColumns) ON \(quotedTable) BEGIN \(updateReplaces.joined(separator: " ")) END"),
            name("update"): .text("CREATE TRIGGER \(quoteIdentifier(name("update"))) AFTER UPDATE ON \(quotedTable) WHEN OLD.\(key) IS NEW.\(key) COLLATE BINARY AND (\(differences.joined(separator: " OR "))) BEGIN \(insert("NEW.\(key)", .update, mask)) END"),
            name("rekey"): .text("CREATE TRIGGER \(quoteIdentifier(name("rekey"))) AFTER UPDATE ON \(quotedTable) WHEN OLD.\(key) IS NOT NEW.\(key) COLLATE BINARY BEGIN \(insert("OLD.\(key)", .delete, "-1")) \(insert("NEW.\(key)", .insert, "-1")) END"),
            name("insert"): .text("CREATE TRIGGER \(quoteIdentifier(name("insert"))) AFTER INSERT ON \(quotedTable) BEGIN \(insert("NEW.\(key)", .insert, "-1")) END"),
            name("delete"): .text("CREATE TRIGGER \(quoteIdentifier(name("delete"))) AFTER DELETE ON \(quotedTable) BEGIN \(insert("OLD.\(key)", .delete, "-1")) END"),
        ]
    }
}

