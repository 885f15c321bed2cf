/// A statement in the engine's own SQL over one table as this store shows it: the rows with
/// changes not yet committed as their objects show them (or gone, when deleted), whatever their
/// number (they reach the database as a table of their own, not as bound values). Read in two
/// stages: the changed rows as committed, then the statement.
///
/// ```swift
/// let rows = try reads.now(TableRows(shown: reads.shown, table: 0, sql: "SELECT count(*) FROM rows WHERE count > ?1", arguments: [10]))
/// ```
struct TableRows: ShownRead {
    let shown: ShownState
    let table: Int
    let sql: String
    let arguments: [SQLValue]
    /// Whether the statement returns the table's rows, in model column order (a raw fetch):
    /// then the rows with changes not yet committed are returned with the values the store
    /// holds for them, which the database may not (a NaN, which SQLite stores as NULL).
    let returnsModelRows: Bool

    /// The rows with changes not yet committed, in key order (a set's order differs from one
    /// instance to the next, and the overlay is part of the read).
    private var changed: (keys: [SQLValue], deletesEveryRow: Bool) {
        let changed = shown.writeBehind.uncommittedRows(table: table)
        return (changed.keys.sortedInValueOrder(), changed.deletesEveryRow)
    }

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        let changed = changed
        guard let read = read(changed, answers) else {
            for key in changed.keys {
                shown.needsCurrentValues(of: RowReference(table: table, key: key), given: answers, into: &needs)
            }
            return
        }
        needs.add(read)
    }

    func compose(_ answers: ReadAnswers) -> [[SQLValue]] {
        guard let read = read(changed, answers) else { return [] }
        let rows = answers.rows(read)
        guard returnsModelRows, case .native(_, _, _, let overlay) = read, !overlay.rows.isEmpty else { return rows }
        let schema = shown.registrar.schemas[table]
        let shownRows = Dictionary(overlay.rows.map { ($0[schema.primaryKeyIndex], $0) }) { _, last in last }
        return rows.map { row in row.count == schema.columns.count ? shownRows[row[schema.primaryKeyIndex]] ?? row : row }
    }

    /// The statement over the table as shown; nil while a changed row's values are unknown.
    private func read(_ changed: (keys: [SQLValue], deletesEveryRow: Bool), _ answers: ReadAnswers) -> DatabaseRead? {
        var overlay = TableOverlay(hiddenKeys: changed.keys, hidesEveryRow: changed.deletesEveryRow)
        for key in changed.keys {
            guard let values = shown.knownCurrentValues(of: RowReference(table: table, key: key), given: answers) else { return nil }
            if let values { overlay.rows.append(values) }
        }
        return .native(table: table, sql: sql, arguments: arguments, overlay: overlay)
    }
}
