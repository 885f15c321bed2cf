/// What both engines' change logs hold, and how their entries become an
/// ``ExternalChangeBatch``: triggers append one entry (table, row key, kind, changed-column
/// mask) per row a transaction writes, whoever writes; a reader merges the entries past its
/// position per row and reloads the rows that are still there.
enum ChangeLogEntries {
    enum Kind: Int64, Sendable {
        case update = 0
        case insert = 1
        case delete = 2
        /// A row a statement may have deleted without a delete trigger firing (SQLite's
        /// `REPLACE` conflict resolution, which runs no delete trigger unless the writing
        /// connection turned on `recursive_triggers`): logged before the statement, for every
        /// row it conflicts with. A reader that finds the row gone hears it deleted; one that
        /// finds it there hears nothing of it (the row's other entries tell what changed).
        case lookAgain = 4
    }

    /// The `kind` of an entry that stands for the whole table (its key is NULL): rows were
    /// inserted in bulk, or the table was emptied, and readers reload the table.
    static let tableReset: Int64 = 3

    /// One entry: `row` has a NULL key for a table reset.
    struct Entry {
        var table: Int
        var key: SQLValue
        var kind: Int64
        var mask: Int64
    }

    /// Which model column each bit of a table's mask stands for.
    struct Layout: Sendable {
        /// By bit position (the table's column order): the model column, if the model has it.
        var modelColumns: [Int?]

        /// The most columns a mask can name; a wider table logs -1 (every column).
        static let maskWidth = 62

        /// The model columns a mask names; every model column for a mask of -1.
        func columns(in mask: Int64, modelColumnCount: Int) -> [Int] {
            guard mask != -1, modelColumns.count <= Self.maskWidth else { return Array(0..<modelColumnCount) }
            return modelColumns.enumerated().compactMap { bit, column in
                mask & (1 << Int64(bit)) != 0 ? column : nil
            }.sorted()
        }
    }

    /// Merges entries per row, in the order rows first appear, and reloads the rows that are
    /// still there with `reload` (the table, and the keys of that table's rows to read; it
    /// returns the rows found, in model column order).
    static func merge(
        _ entries: [Entry], schemas: [TableSchema], layouts: [Layout], into batch: inout ExternalChangeBatch,
        reload: (_ table: Int, _ keys: [SQLValue]) throws -> [SQLValue: [SQLValue]]
    ) throws {
        // Each row's merged entries, in the order rows first appear, and where each row's are:
        // one lookup for each entry.
        // `replaced`: the row was deleted and inserted again, so it is another row now.
        // `lookedAgain`: a statement may have replaced it (an insert of its key after that
        // could only succeed if it went).
        struct Merged {
            var row: RowReference
            var kind: Kind
            var mask: Int64
            var replaced = false
            var lookedAgain: Bool
        }
        var merged: [Merged] = []
        merged.reserveCapacity(entries.count)
        var mergedIndex: [RowReference: Int] = [:]
        mergedIndex.reserveCapacity(entries.count)
        for entry in entries {
            if entry.kind == tableReset {
                if !batch.resetTables.contains(entry.table) { batch.resetTables.append(entry.table) }
                continue
            }
            guard let logged = Kind(rawValue: entry.kind) else { continue }
            let row = RowReference(table: entry.table, key: entry.key)
            if let index = mergedIndex[row] {
                let previous = merged[index]
                let kind: Kind = switch (previous.kind, logged) {
                case (_, .delete): .delete
                case (.insert, .update): .insert
                case (_, .lookAgain): previous.kind
                default: logged
                }
                let replaced = previous.replaced || ((previous.kind == .delete || previous.lookedAgain) && logged == .insert)
                merged[index] = Merged(row: row, kind: kind, mask: previous.mask | entry.mask, replaced: replaced, lookedAgain: previous.lookedAgain || logged == .lookAgain)
            } else {
                mergedIndex[row] = merged.count
                merged.append(Merged(row: row, kind: logged, mask: entry.mask, lookedAgain: logged == .lookAgain))
            }
        }
        // A table known only as a whole is reloaded as a whole: the inserts and updates its
        // entries tell of, the reset's reload tells of again (an insert of a row it shows, say,
        // where a TRUNCATE went unlogged row by row). A row they delete, or delete and insert
        // again, is told as that: it is another row now, and the reload cannot tell.
        if !batch.resetTables.isEmpty {
            merged.removeAll { batch.resetTables.contains($0.row.table) && $0.kind != .delete && !$0.replaced }
        }
        var present: [Int: [SQLValue: [SQLValue]]] = [:]
        let reloaded = Dictionary(grouping: merged.lazy.filter { $0.kind != .delete }.map(\.row), by: \.table)
        for (table, rows) in reloaded {
            present[table] = try reload(table, rows.map(\.key))
        }
        // Rows of a table mostly change the same columns: each mask's columns are made once.
        struct TableMask: Hashable {
            var table: Int
            var mask: Int64
        }
        var columnsOfMask: [TableMask: [Int]] = [:]
        batch.rows.reserveCapacity(batch.rows.count + merged.count)
        for item in merged {
            let (row, kind) = (item.row, item.kind)
            let values = kind == .delete ? nil : present[row.table]?[row.key]
            // A row only looked at again is heard only if it went.
            if kind == .lookAgain, values != nil { continue }
            let shown = TableMask(table: row.table, mask: kind == .lookAgain ? -1 : item.mask)
            let columns: [Int]
            if let known = columnsOfMask[shown] {
                columns = known
            } else {
                columns = layouts[row.table].columns(in: shown.mask, modelColumnCount: schemas[row.table].columns.count)
                columnsOfMask[shown] = columns
            }
            let rowKind: ExternalChangeBatch.Row.Kind = switch (kind, values) {
            case (.delete, _), (.lookAgain, _), (_, nil): .delete
            case (.insert, _): .insert
            case (.update, _): .update
            }
            // A row deleted and inserted again is told as that: the store's changes to the old
            // row do not carry over to the new one.
            if item.replaced, rowKind == .insert {
                batch.rows.append(.init(table: row.table, key: row.key, kind: .delete, columns: columns, values: nil))
            }
            batch.rows.append(.init(table: row.table, key: row.key, kind: rowKind, columns: columns, values: values))
        }
    }
}
