extension WriteOperation {
    /// A row's key, or `the new row` for one whose key the database has yet to assign.
    private static func describe(_ row: RowReference) -> String {
        KeyPlaceholder.request(in: row.key) == nil ? "\(row.key)" : "the new row"
    }

    /// `update rows 42: count += 1`, for inspection and messages; with `showingTypes`, each
    /// value is followed by its storage class: `title = NULL (null)`.
    func description(tables: [TableSchema], showingTypes: Bool = false) -> String {
        func value(_ value: SQLValue) -> String {
            if KeyPlaceholder.request(in: value) != nil { return "the key of a new row" }
            return showingTypes ? "\(value) (\(value.storageClass))" : "\(value)"
        }
        switch self {
        case .insert(let request):
            let schema = tables[request.table]
            let pairs = zip(schema.columns, request.values).map { "\($0.name) = \(value($1))" }
            return "insert into \(schema.name): \(pairs.joined(separator: ", "))"
        case .update(let row, let cells):
            let schema = tables[row.table]
            let pairs = cells.map { cell in
                switch cell.write {
                case .set(let new): "\(schema.columns[cell.column].name) = \(value(new))"
                case .add(let delta): "\(schema.columns[cell.column].name) += \(delta)"
                }
            }
            return "update \(schema.name) \(Self.describe(row)): \(pairs.joined(separator: ", "))"
        case .delete(let row):
            return "delete from \(tables[row.table].name) \(Self.describe(row))"
        case .deleteAll(let table):
            return "delete every row from \(tables[table].name)"
        }
    }
}
