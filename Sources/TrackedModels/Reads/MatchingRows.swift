/// The rows a compiled query matches, in its order, each a row of the query (the table's
/// columns, then each join's, as this store shows them).
///
/// The database answers for the rows it holds unchanged; the rows with changes not yet
/// committed are judged by their current values instead, and so are the rows that point at a
/// target with such changes when the predicate or the order reads it, and the rows of inserts
/// whose key the database has yet to assign (each with its key's placeholder as its key: see
/// ``CompiledQuery/matches(_:)``). Read in two stages: the rows that point at changed targets
/// and the changed rows as committed, then the query (its limit widened by the rows judged
/// here) and the targets of the rows judged here.
struct MatchingRows: ShownRead {
    let shown: ShownState
    let plan: CompiledQuery
    /// Whether to apply the plan's offset and limit.
    let windowed: Bool

    /// The keys of the table's rows with changes not yet committed, and those of each join's
    /// target table; the table's inserts whose key is still to assign, and the keys the
    /// database gave some of them that the store has yet to apply (the database's rows of those
    /// keys are those inserts: they show once, by their placeholders).
    private struct Changed {
        var rows: (keys: Set<SQLValue>, deletesEveryRow: Bool)
        /// Listed only where the predicate or the order reads through the joins (the rows
        /// pointing at them are judged here); empty otherwise.
        var targets: [(keys: Set<SQLValue>, deletesEveryRow: Bool)]
        var hasChangedTargets: Bool
        var unkeyed: [RowReference]
        var assignedAhead: Set<SQLValue>

        /// How many rows of the database's answer the rows judged here may take the place of.
        /// (The keys assigned ahead are a moving subset of the inserts still to key, published
        /// by the worker's thread: their count bounds them, and stays the same through a read.)
        func judged(pointing: Int) -> Int { rows.keys.count + pointing + unkeyed.count }
    }

    private func changed() -> Changed {
        let unkeyed = shown.registrar.unkeyedRows(table: plan.table)
        let targets = plan.readsThroughJoins ? plan.joins.map { shown.writeBehind.uncommittedRows(table: $0.targetTable) } : []
        return Changed(
            rows: shown.writeBehind.uncommittedRows(table: plan.table),
            targets: targets,
            hasChangedTargets: plan.readsThroughJoins
                ? targets.contains { !$0.keys.isEmpty || $0.deletesEveryRow }
                : plan.joins.contains { shown.writeBehind.hasUncommittedRows(table: $0.targetTable) },
            unkeyed: unkeyed,
            assignedAhead: unkeyed.isEmpty ? [] : shown.writeBehind.keysAssignedAhead(table: plan.table)
        )
    }

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        let changed = changed()
        let pointingReads = pointingReads(changed)
        pointingReads.forEach { needs.add($0) }
        for key in changed.rows.keys {
            shown.needsCurrentValues(of: RowReference(table: plan.table, key: key), given: answers, into: &needs)
        }
        guard pointingReads.allSatisfy(answers.has) else { return }
        let pointing = pointing(pointingReads, answers, changed)
        if let read = read(changed, judged: changed.judged(pointing: pointing.count)) { needs.add(read) }
        // The targets of the rows judged here.
        var judged: [[SQLValue]] = pointing.map { key, committed in
            shown.registrar.identityMap.object(table: plan.table, shownAs: key)?._$values() ?? committed
        }
        for key in changed.rows.keys {
            if case .some(.some(let values)) = shown.knownCurrentValues(of: RowReference(table: plan.table, key: key), given: answers) {
                judged.append(values)
            }
        }
        for row in changed.unkeyed {
            if let values = shown.currentValues(of: row, given: answers) { judged.append(values) }
        }
        for values in judged {
            for join in plan.joins where values[join.column] != .null {
                shown.needsCurrentValues(of: RowReference(table: join.targetTable, key: values[join.column]), given: answers, into: &needs)
            }
        }
    }

    func compose(_ answers: ReadAnswers) -> [[SQLValue]] {
        let changed = changed()
        let keyColumn = plan.schema.primaryKeyIndex
        let pointing = pointing(pointingReads(changed), answers, changed)
        let judged = changed.judged(pointing: pointing.count)
        var rows = read(changed, judged: judged).map(answers.rows) ?? []
        if changed.hasChangedTargets, !plan.readsThroughJoins {
            // The selection and the order stand; the targets show their current values.
            rows = rows.map { showingCurrentTargets($0, held: answers.held) }
        }
        if judged > 0 || !changed.unkeyed.isEmpty || changed.rows.deletesEveryRow {
            rows.removeAll {
                changed.rows.keys.contains($0[keyColumn]) || pointing[$0[keyColumn]] != nil || changed.assignedAhead.contains($0[keyColumn])
            }
            var values: [[SQLValue]] = pointing.map { key, committed in
                shown.registrar.identityMap.object(table: plan.table, shownAs: key)?._$values() ?? committed
            }
            for key in changed.rows.keys {
                if let current = shown.currentValues(of: RowReference(table: plan.table, key: key), given: answers) { values.append(current) }
            }
            for row in values.map({ shown.queryRow(plan, values: $0, given: answers) }) where plan.matches(row) {
                rows.append(row)
            }
            for unkeyed in changed.unkeyed {
                guard let current = shown.currentValues(of: unkeyed, given: answers) else { continue }
                let row = shown.queryRow(plan, values: current, key: unkeyed.key, given: answers)
                if plan.matches(row) { rows.append(row) }
            }
            let order = plan.entryOrder
            rows.sort { order.precedes(plan.entry(of: $0), plan.entry(of: $1)) }
        }
        guard windowed else { return rows }
        let start = min(plan.offset, rows.count)
        let end = plan.limit.map { min(start + $0, rows.count) } ?? rows.count
        return Array(rows[start..<end])
    }

    /// The query itself, with room in its window for each row judged here (each can take at
    /// most one place from it); nil when every row is deleted.
    private func read(_ changed: Changed, judged: Int) -> DatabaseRead? {
        guard !changed.rows.deletesEveryRow else { return nil }
        return .query(plan, limit: windowed ? plan.limit.map { $0 + plan.offset + judged } : nil)
    }

    /// The reads of the rows whose target has changes not yet committed, where the predicate
    /// or the order reads through the joins.
    private func pointingReads(_ changed: Changed) -> [DatabaseRead] {
        guard !changed.rows.deletesEveryRow, changed.hasChangedTargets, plan.readsThroughJoins else { return [] }
        var reads: [DatabaseRead] = []
        for (join, targets) in zip(plan.joins, changed.targets) {
            if targets.deletesEveryRow {
                let every = CompiledQuery(
                    table: plan.table, schema: plan.schema, predicate: nil, sort: [plan.sort[plan.sort.count - 1]],
                    columnsRead: [], joins: plan.joins, limit: nil, offset: 0
                )
                reads.append(.query(every, limit: nil))
            } else {
                let keys = targets.keys.sortedInValueOrder()
                for start in stride(from: 0, to: keys.count, by: 500) {
                    reads.append(.query(plan.rowsPointing(atAnyOf: Array(keys[start..<min(start + 500, keys.count)]), through: join), limit: nil))
                }
            }
        }
        return reads
    }

    /// The rows the pointing reads found that have no changes of their own, by key, with their
    /// committed values.
    private func pointing(_ reads: [DatabaseRead], _ answers: ReadAnswers, _ changed: Changed) -> [SQLValue: [SQLValue]] {
        let keyColumn = plan.schema.primaryKeyIndex
        let width = plan.schema.columns.count
        var pointing: [SQLValue: [SQLValue]] = [:]
        for read in reads {
            for row in answers.rows(read) where !changed.rows.keys.contains(row[keyColumn]) {
                pointing[row[keyColumn]] = Array(row.prefix(width))
            }
        }
        return pointing
    }

    /// A row of the query as the database answered it, its targets' columns as this store
    /// shows them (the database's answer is their committed values, holding `held`).
    private func showingCurrentTargets(_ row: [SQLValue], held: CommitProgress) -> [SQLValue] {
        var shownRow = row
        for join in plan.joins where row[join.column] != .null {
            let columns = join.offset..<(join.offset + join.target.columns.count)
            let committed = row[join.offset + join.target.primaryKeyIndex] == .null ? nil : Array(row[columns])
            let target = shown.currentValues(of: RowReference(table: join.targetTable, key: row[join.column]), committed: committed, held: held)
            shownRow.replaceSubrange(columns, with: target ?? Array(repeating: .null, count: join.target.columns.count))
        }
        return shownRow
    }
}

/// One row as a row of a query (the table's columns, then each join's target's), as this
/// store shows it; nil when there is no row.
struct QueryRow: ShownRead {
    let shown: ShownState
    let plan: CompiledQuery
    let key: SQLValue

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        let row = RowReference(table: plan.table, key: key)
        shown.needsCurrentValues(of: row, given: answers, into: &needs)
        guard !plan.joins.isEmpty, case .some(.some(let values)) = shown.knownCurrentValues(of: row, given: answers) else { return }
        for join in plan.joins where values[join.column] != .null {
            shown.needsCurrentValues(of: RowReference(table: join.targetTable, key: values[join.column]), given: answers, into: &needs)
        }
    }

    /// A keyed row with an object, read by a query without joins: the object's values.
    func composedFromObjects() -> [SQLValue]?? {
        guard plan.joins.isEmpty, let object = shown.registrar.identityMap.object(table: plan.table, key: key) else { return nil }
        return .some(object._$values())
    }

    func compose(_ answers: ReadAnswers) -> [SQLValue]? {
        let isUnkeyed = KeyPlaceholder.request(in: key) != nil
        return shown.currentValues(of: RowReference(table: plan.table, key: key), given: answers).map { values in
            // A row waiting for its key shows it NULL: its query row holds its identity.
            isUnkeyed ? shown.queryRow(plan, values: values, key: key, given: answers) : shown.queryRow(plan, values: values, given: answers)
        }
    }
}

/// How many rows a compiled query matches, within its window: the database counts where no
/// row of the tables it reads has changes not yet committed, else the rows are read.
struct MatchCount: ShownRead {
    let shown: ShownState
    let plan: CompiledQuery

    private var isCommittedAsShown: Bool {
        shown.registrar.unkeyedRows(table: plan.table).isEmpty && ([plan.table] + plan.joins.map(\.targetTable)).allSatisfy { table in
            let changed = shown.writeBehind.uncommittedRows(table: table)
            return changed.keys.isEmpty && !changed.deletesEveryRow
        }
    }

    private var rows: MatchingRows { MatchingRows(shown: shown, plan: plan, windowed: true) }

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        guard isCommittedAsShown else { return rows.needs(given: answers, into: &needs) }
        needs.add(.count(plan))
    }

    func compose(_ answers: ReadAnswers) -> Int {
        guard isCommittedAsShown else { return rows.compose(answers).count }
        guard case .integer(let total) = answers.rows(.count(plan)).first?.first else { return 0 }
        let afterOffset = max(0, Int(total) - plan.offset)
        return plan.limit.map { min($0, afterOffset) } ?? afterOffset
    }
}

extension ShownState {
    /// A row of the table, given its current values, as a row of the query: each join's
    /// target's current values follow (NULLs where it points at nothing, or at no row). A link
    /// to a new object whose key the database has yet to assign (NULL in `values`) reaches it.
    ///
    /// - Parameter key: The row's key, where `values` do not hold it: the placeholder of an
    ///   insert's key still to assign, which the query row holds as its identity.
    func queryRow(_ plan: CompiledQuery, values: [SQLValue], key: SQLValue? = nil, given answers: ReadAnswers) -> [SQLValue] {
        var row = values
        if let key { row[plan.schema.primaryKeyIndex] = key }
        guard !plan.joins.isEmpty else { return row }
        row.reserveCapacity(plan.width)
        for join in plan.joins {
            row += joinedValues(of: RowReference(table: plan.table, key: key ?? values[plan.schema.primaryKeyIndex]), values: values, join: join, given: answers)
                ?? Array(repeating: .null, count: join.target.columns.count)
        }
        return row
    }

    /// The insert, still waiting for its key, that a to-one cell showing NULL points at: what a
    /// row waiting for its own key points at is its object's (which forgets an insert taken
    /// back); a keyed row's is its last write still to commit.
    private func linkedInsert(of cell: CellReference) -> UInt64? {
        guard KeyPlaceholder.request(in: cell.row.key) != nil else { return writeBehind.linkedInsert(of: cell) }
        return registrar.identityMap.object(table: cell.row.table, shownAs: cell.row.key)?._$relatedObject(column: cell.column).flatMap(registrar.insertRequest(of:))
    }

    /// What a row's to-one points at, as this store shows it; nil for nothing.
    private func joinedValues(of row: RowReference, values: [SQLValue], join: CompiledQuery.Join, given answers: ReadAnswers) -> [SQLValue]? {
        if values[join.column] != .null {
            return currentValues(of: RowReference(table: join.targetTable, key: values[join.column]), given: answers)
        }
        guard registrar.identityMap.hasUnkeyed, let request = linkedInsert(of: CellReference(row: row, column: join.column)) else { return nil }
        let target = RowReference(table: join.targetTable, key: KeyPlaceholder.value(forInsert: request))
        // The target is there: its key column holds its identity (a predicate reads the key to
        // tell whether the to-one points at a row).
        guard var values = currentValues(of: target, given: answers) else { return nil }
        values[join.target.primaryKeyIndex] = target.key
        return values
    }
}
