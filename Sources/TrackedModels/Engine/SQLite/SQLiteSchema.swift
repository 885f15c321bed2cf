/// How the SQLite engine reads a table's real declaration, to check it against its model.
extension TableSchema {
    /// Creates the model's table, and its relationships' indexes, where no table of that name
    /// (in any case) exists.
    func createIfMissing(on connection: Connection) throws {
        let exists = try connection.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", [.text(name)])
        guard exists == .integer(0) else { return }
        try connection.execute(createTableSQL)
        for index in createIndexSQL { try connection.execute(index) }
    }

    /// Compares the model with the real table (`PRAGMA table_info`) and lists every difference.
    func differences(from connection: Connection) throws -> [SchemaDifference] {
        let rows = try connection.makeStatement("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)").rows([.text(name)])
        guard !rows.isEmpty else {
            return [SchemaDifference(table: name, column: nil, problem: "table is missing; create it (a migration, or createsMissingTables) before opening the store")]
        }
        var actual: [String: (type: String, notNull: Bool, isPrimaryKey: Bool)] = [:]
        for row in rows {
            guard case .text(let column) = row[0] else { continue }
            let declared: String = if case .text(let type) = row[1] { type } else { "" }
            actual[column] = (declared, row[2] == .integer(1), row[3] != .integer(0))
        }
        var differences: [SchemaDifference] = []
        for column in columns {
            guard let found = actual[column.name] else {
                differences.append(SchemaDifference(table: name, column: column.name, problem: "column is missing; add it as \(column.type.rawValue)"))
                continue
            }
            if !column.type.isCompatible(withDeclaredType: found.type) {
                let declared = found.type.isEmpty ? "no type" : found.type
                differences.append(SchemaDifference(
                    table: name, column: column.name,
                    problem: "declared \(declared) but the model stores \(column.type.rawValue) (property \(column.property)); change the column type or the property type"
                ))
            }
            if column.isPrimaryKey != found.isPrimaryKey {
                differences.append(SchemaDifference(
                    table: name, column: column.name,
                    problem: column.isPrimaryKey
                        ? "is the model's @PrimaryKey but not the table's primary key"
                        : "is the table's primary key but not the model's @PrimaryKey"
                ))
            }
            if !column.isOptional, !column.isPrimaryKey, !found.notNull {
                differences.append(SchemaDifference(
                    table: name, column: column.name,
                    problem: "allows NULL but \(column.property) is not optional; declare the column NOT NULL or make the property optional"
                ))
            }
        }
        if assignsPrimaryKey, try isKeyIndexed(on: connection) {
            differences.append(SchemaDifference(
                table: name, column: primaryKey.name,
                problem: "is not the table's rowid, so SQLite does not assign it, but \(primaryKey.property) is an optional integer key left to SQLite; "
                    + "declare it \(quoteIdentifier(primaryKey.name)) INTEGER PRIMARY KEY (not INT, not DESC, in a table with rowids), or make the property non-optional and supply keys"
            ))
        }
        return differences
    }

    /// Whether the primary key has an index of its own: it is then an ordinary column, not an
    /// alias of the rowid (INT instead of INTEGER, `PRIMARY KEY DESC`, `WITHOUT ROWID`).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_createtable.html#rowid>
    private func isKeyIndexed(on connection: Connection) throws -> Bool {
        try connection.scalar("SELECT count(*) FROM pragma_index_list(?) WHERE origin = 'pk'", [.text(name)]) != .integer(0)
    }
}

extension ColumnType {
    /// The type affinity SQLite gives a declared column type, by its documented rules.
    static func affinity(ofDeclaredType declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// Whether a table column with this declared type stores this column type faithfully.
    func isCompatible(withDeclaredType declared: String) -> Bool {
        switch (self, Self.affinity(ofDeclaredType: declared)) {
        case (.integer, "INTEGER"), (.integer, "NUMERIC"),
            (.real, "REAL"), (.real, "NUMERIC"),
            (.text, "TEXT"),
            (.blob, "BLOB"):
            true
        default:
            false
        }
    }
}
