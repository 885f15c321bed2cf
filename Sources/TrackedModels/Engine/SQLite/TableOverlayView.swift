/// Runs a read over one table as a store sees it, on SQLite: for the length of the read, the
/// table's name means a TEMP view of the committed rows without those the store has changed,
/// and the rows as the store shows them, kept in a TEMP table declared with the real table's
/// column types.
///
/// A TEMP object of the same name hides the real table from unqualified names, so the
/// caller's SQL runs as written: its own parameters (`?`, `?NNN`, `:name`) are the only ones
/// bound, any number of rows may be pending (they are inserted, not bound into the
/// statement), values compare with the real columns' affinity, the table's columns outside the
/// model keep their committed values, and `rowid` names each row's rowid (the key, where it is
/// the rowid; NULL for a row not committed yet, where it is not).
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_createview.html>,
/// <https://www.sqlite.org/datatype3.html#affinity_of_expressions>,
/// <https://www.sqlite.org/lang_naming.html> (TEMP objects are found first).
struct TableOverlayView {
    private let table: String
    private let key: String
    /// Every column of the real table, with its declared type.
    private let columns: [(name: String, type: String)]
    /// The model's columns, in model order: the overlay's rows hold these.
    private let modelColumns: [String]
    /// How the view names each row's rowid: nil for a table without one, or that has a column
    /// of that name.
    private let rowid: RowID?

    private enum RowID {
        /// The key is the rowid.
        case key
        /// A rowid of its own, which a row not committed yet does not have.
        case own
    }

    private static let rows = "trackedmodels_overlay_rows"
    private static let hidden = "trackedmodels_overlay_hidden"

    /// Reads the real table's declaration.
    init(schema: TableSchema, on connection: Connection) throws {
        table = schema.name
        key = schema.primaryKey.name
        modelColumns = schema.columns.map(\.name)
        let info = try connection.makeStatement("SELECT name, type, pk FROM pragma_table_xinfo(?) ORDER BY cid").rows([.text(schema.name)])
        columns = info.compactMap { row in
            guard case .text(let name) = row[0] else { return nil }
            if case .text(let type) = row[1] { return (name, type) }
            return (name, "")
        }
        let keyColumns = info.filter { $0[2] != .integer(0) }
        let arguments: [SQLValue] = [.text(schema.name)]
        let isWithoutRowID = try connection.scalar("SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE AND wr", arguments) != .integer(0)
        // A key that is not the rowid has an index of its own (origin 'pk'); the rowid's alias
        // (`INTEGER PRIMARY KEY`, not `DESC`) has none.
        let hasKeyIndex = try connection.scalar("SELECT count(*) FROM pragma_index_list(?) WHERE origin = 'pk'", arguments) != .integer(0)
        let takenName = columns.contains { ["rowid", "oid", "_rowid_"].contains($0.name.lowercased()) }
        if isWithoutRowID || takenName {
            rowid = nil
        } else if keyColumns.count == 1, case .text(let type) = keyColumns[0][1], type.uppercased() == "INTEGER", !hasKeyIndex {
            rowid = .key
        } else {
            rowid = .own
        }
    }

    /// Runs `body` with the table as the store shows it: the committed rows but those of
    /// `overlay.hiddenKeys` (or none, when it hides every row), and `overlay.rows`.
    func reading<Result>(_ overlay: TableOverlay, on connection: Connection, _ body: () throws -> Result) throws -> Result {
        try connection.withTransaction(.deferred) {
            try dropObjects(on: connection)
            defer { try? dropObjects(on: connection) }
            let declared = columns.map { "\(quoteIdentifier($0.name)) \($0.type)" }.joined(separator: ", ")
            try connection.execute("CREATE TEMP TABLE \(Self.rows) (\(declared))")
            try connection.execute("CREATE TEMP TABLE \(Self.hidden) (k PRIMARY KEY) WITHOUT ROWID")
            let insertKey = try connection.makeStatement("INSERT OR IGNORE INTO temp.\(Self.hidden) VALUES (?)")
            for hidden in overlay.hiddenKeys { try insertKey.run([hidden]) }
            let names = modelColumns.map(quoteIdentifier).joined(separator: ", ")
            let insertRow = try connection.makeStatement(
                "INSERT INTO temp.\(Self.rows) (\(names)) VALUES (\(Array(repeating: "?", count: modelColumns.count).joined(separator: ", ")))"
            )
            for row in overlay.rows { try insertRow.run(row.map(\.nanAsNull)) }
            try connection.execute(viewSQL(hidingEveryRow: overlay.hidesEveryRow))
            return try body()
        }
    }

    private func dropObjects(on connection: Connection) throws {
        try connection.execute("DROP VIEW IF EXISTS temp.\(quoteIdentifier(table))")
        try connection.execute("DROP TABLE IF EXISTS temp.\(Self.rows)")
        try connection.execute("DROP TABLE IF EXISTS temp.\(Self.hidden)")
    }

    /// The view: committed rows first (so that its columns take the real columns' affinity),
    /// then the overlay's, whose columns outside the model are the committed row's.
    private func viewSQL(hidingEveryRow: Bool) -> String {
        let real = "main.\(quoteIdentifier(table))"
        let model = Set(modelColumns)
        let committed = columns.map { "\(real).\(quoteIdentifier($0.name))" }
        let shown = columns.map { column in
            model.contains(column.name) ? "o.\(quoteIdentifier(column.name))" : "c.\(quoteIdentifier(column.name))"
        }
        var committedRowID = "", shownRowID = ""
        switch rowid {
        case .key?:
            committedRowID = ", \(real).rowid AS rowid"
            shownRowID = ", o.\(quoteIdentifier(key))"
        case .own?:
            committedRowID = ", \(real).rowid AS rowid"
            shownRowID = ", c.rowid"
        case nil:
            break
        }
        let filter = hidingEveryRow ? "0" : "\(real).\(quoteIdentifier(key)) NOT IN (SELECT k FROM temp.\(Self.hidden))"
        return """
            CREATE TEMP VIEW \(quoteIdentifier(table)) AS \
            SELECT \(committed.joined(separator: ", "))\(committedRowID) FROM \(real) WHERE \(filter) \
            UNION ALL SELECT \(shown.joined(separator: ", "))\(shownRowID) FROM temp.\(Self.rows) AS o \
            LEFT JOIN \(real) AS c ON c.\(quoteIdentifier(key)) = o.\(quoteIdentifier(key))
            """
    }
}
