extension ModelStore {
    /// The objects a descriptor matches, in its order and window.
    ///
    /// The predicate and order run in SQLite; changes not yet flushed count too, as in
    /// SwiftData: an object whose pending values no longer match is left out, and one that now
    /// matches is included, in order.
    ///
    /// ```swift
    /// let busy = try store.fetch(FetchDescriptor<Row>(
    ///     predicate: #Predicate { $0.count > 10 },
    ///     sortBy: [SortDescriptor(\.count, order: .reverse)]
    /// ))
    /// ```
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/unsupportedPredicate``) naming an expression
    ///   or sort without an exact SQL translation; ``StoreError`` when the database cannot be read.
    public func fetch<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> [Model] {
        try checkOpen("fetch")
        let plan = try compile(descriptor)
        let width = plan.schema.columns.count
        let rows = try matchingRows(plan, windowed: true)
        let objects = try rows.map { try object(Model.self, table: plan.table, values: $0.count == width ? $0 : Array($0.prefix(width))) }
        try prefetch(descriptor.relationshipKeyPathsForPrefetching, of: objects)
        return objects
    }

    /// Compiles a descriptor for this store's tables.
    func compile<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> CompiledQuery {
        try CompiledQuery(descriptor, table: registrar.tableIndex(of: Model.self)) { [registrar] in try registrar.tableIndex(of: $0) }
    }

    /// How many objects a descriptor matches (within its window), counting changes not yet
    /// flushed.
    ///
    /// ```swift
    /// let n = try store.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
    /// ```
    public func fetchCount<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> Int {
        try checkOpen("fetchCount")
        let plan = try compile(descriptor)
        let tables = [plan.table] + plan.joins.map(\.targetTable)
        let isCommittedAsShown = tables.allSatisfy { table in
            let uncommitted = writeBehind.uncommittedRows(table: table)
            return uncommitted.keys.isEmpty && !uncommitted.deletesEveryRow
        }
        guard isCommittedAsShown else { return try matchingRows(plan, windowed: true).count }
        let afterOffset = max(0, try reader.count(matching: plan) - plan.offset)
        return plan.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    /// The rows a plan matches, in its order, each as a row of the query (the table's columns,
    /// then each join's, as this store shows them): the database's answer, with the rows that
    /// have uncommitted changes judged by current values instead, and so are the rows that
    /// point at a target with uncommitted changes when the predicate or the order reads it.
    ///
    /// - Parameter windowed: Whether to apply the plan's offset and limit.
    func matchingRows(_ plan: CompiledQuery, windowed: Bool) throws -> [[SQLValue]] {
        let uncommitted = writeBehind.uncommittedRows(table: plan.table)
        let keyColumn = plan.schema.primaryKeyIndex
        // Each join's target rows with uncommitted changes, looked up once.
        let targetChanges = plan.joins.map { writeBehind.uncommittedRows(table: $0.targetTable) }
        let changedTargets = targetChanges.contains { !$0.keys.isEmpty || $0.deletesEveryRow }
        // Rows whose target has uncommitted changes, with their own committed values.
        var pointing: [SQLValue: [SQLValue]] = [:]
        if !uncommitted.deletesEveryRow, changedTargets, plan.readsThroughJoins {
            for (join, targets) in zip(plan.joins, targetChanges) {
                var reads: [CompiledQuery] = []
                if targets.deletesEveryRow {
                    reads = [CompiledQuery(
                        table: plan.table, schema: plan.schema, predicate: nil, sort: [plan.sort[plan.sort.count - 1]],
                        columnsRead: [], joins: plan.joins, limit: nil, offset: 0
                    )]
                } else {
                    // In key order: the statements are the keys their answers are found by.
                    let keys = targets.keys.sortedInValueOrder()
                    reads = stride(from: 0, to: keys.count, by: 500).map {
                        plan.rowsPointing(atAnyOf: Array(keys[$0..<min($0 + 500, keys.count)]), through: join)
                    }
                }
                for read in reads {
                    for row in try reader.rows(matching: read, limit: nil) where !uncommitted.keys.contains(row[keyColumn]) {
                        pointing[row[keyColumn]] = Array(row.prefix(plan.schema.columns.count))
                    }
                }
            }
        }
        var rows: [[SQLValue]] = []
        let judged = uncommitted.keys.count + pointing.count
        if !uncommitted.deletesEveryRow {
            // Each row judged here can take at most one place from the window.
            let limit = windowed ? plan.limit.map { $0 + plan.offset + judged } : nil
            rows = try reader.rows(matching: plan, limit: limit)
        }
        var targets = TargetValues()
        if changedTargets, !plan.readsThroughJoins {
            // The selection and the order stand; the targets' values are taken as they are now.
            let width = plan.schema.columns.count
            rows = try rows.map { try queryRow(plan, values: Array($0.prefix(width)), targets: &targets) }
        }
        if judged > 0 || uncommitted.deletesEveryRow {
            rows.removeAll { uncommitted.keys.contains($0[keyColumn]) || pointing[$0[keyColumn]] != nil }
            for key in uncommitted.keys {
                guard let values = try currentValues(table: plan.table, key: key) else { continue }
                let row = try queryRow(plan, values: values, targets: &targets)
                if plan.matches(row) { rows.append(row) }
            }
            for (key, committed) in pointing {
                let values = registrar.object(table: plan.table, key: key)?._$values() ?? committed
                let row = try queryRow(plan, values: values, targets: &targets)
                if plan.matches(row) { rows.append(row) }
            }
            rows.sort { plan.precedes(plan.entry(of: $0), plan.entry(of: $1)) }
        }
        guard windowed else { return rows }
        let start = min(plan.offset, rows.count)
        let end = plan.limit.map { min(start + $0, rows.count) } ?? rows.count
        return Array(rows[start..<end])
    }

    /// The current values of the rows that relationships point at, read once per row.
    typealias TargetValues = [RowReference: [SQLValue]?]

    /// A row's current values as a row of the query: the table's columns, then, for each join,
    /// the current values of the row the relationship points at (NULLs where there is none);
    /// nil when there is no row.
    func queryRow(_ plan: CompiledQuery, key: SQLValue) throws -> [SQLValue]? {
        guard let values = try currentValues(table: plan.table, key: key) else { return nil }
        var targets = TargetValues()
        return try queryRow(plan, values: values, targets: &targets)
    }

    /// A row of the table, given its current values, as a row of the query.
    func queryRow(_ plan: CompiledQuery, values: [SQLValue], targets: inout TargetValues) throws -> [SQLValue] {
        guard !plan.joins.isEmpty else { return values }
        var row = values
        row.reserveCapacity(plan.width)
        for join in plan.joins {
            let key = values[join.column]
            var target: [SQLValue]?
            if key != .null {
                let reference = RowReference(table: join.targetTable, key: key)
                if let known = targets[reference] {
                    target = known
                } else {
                    target = try currentValues(table: join.targetTable, key: key)
                    targets[reference] = .some(target)
                }
            }
            row += target ?? Array(repeating: .null, count: join.target.columns.count)
        }
        return row
    }

    /// A row as committed; nil when the file has none.
    func committedValues(table: Int, key: SQLValue) throws -> [SQLValue]? {
        try reader.row(table: table, key: key)
    }

    /// A row's current values: its object's, else what is committed with this store's changes
    /// not yet committed applied; nil when there is no row, or when this store deleted it
    /// (committed or not).
    func currentValues(table: Int, key: SQLValue) throws -> [SQLValue]? {
        if let object = registrar.object(table: table, key: key) { return object._$values() }
        let row = RowReference(table: table, key: key)
        // Being delivered, the row was just read with its change: no need to read it again.
        let committed = try registrar.deliveredCommittedValues(of: row) ?? committedValues(table: table, key: key)
        return writeBehind.uncommittedValues(of: row, over: committed)
    }

    /// Live results of a descriptor: see ``FetchedResults``.
    ///
    /// ```swift
    /// let busy = try store.results(for: FetchDescriptor<Row>(
    ///     predicate: #Predicate { $0.count > 0 },
    ///     sortBy: [SortDescriptor(\.count, order: .reverse)]
    /// ))
    /// ```
    public func results<Model: TrackedModel>(for descriptor: FetchDescriptor<Model>) throws -> FetchedResults<Model> {
        try checkOpen("results(for:)")
        let plan = try compile(descriptor)
        return FetchedResults(store: self, plan: plan, matching: try matchingRows(plan, windowed: false))
    }
}
