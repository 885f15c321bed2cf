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
        let table = try registrar.tableIndex(of: Model.self)
        let plan = try CompiledQuery(descriptor, table: table)
        return try matchingRows(plan, windowed: true).map { try object(Model.self, table: table, values: $0) }
    }

    /// How many objects a descriptor matches (within its window), counting changes not yet
    /// flushed.
    ///
    /// ```swift
    /// let n = try store.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
    /// ```
    public func fetchCount<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> Int {
        try checkOpen("fetchCount")
        let plan = try CompiledQuery(descriptor, table: try registrar.tableIndex(of: Model.self))
        let uncommitted = writeBehind.uncommittedRows(table: plan.table)
        guard uncommitted.keys.isEmpty, !uncommitted.deletesEveryRow else { return try matchingRows(plan, windowed: true).count }
        let afterOffset = max(0, try reader.count(matching: plan) - plan.offset)
        return plan.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    /// The values of every row a plan matches, in its order: the database's answer, with the
    /// rows that have uncommitted changes judged by their objects' values instead.
    ///
    /// - Parameter windowed: Whether to apply the plan's offset and limit.
    func matchingRows(_ plan: CompiledQuery, windowed: Bool) throws -> [[SQLValue]] {
        let uncommitted = writeBehind.uncommittedRows(table: plan.table)
        var rows: [[SQLValue]] = []
        if !uncommitted.deletesEveryRow {
            // Each row with uncommitted changes can take at most one place from the window.
            let limit = windowed ? plan.limit.map { $0 + plan.offset + uncommitted.keys.count } : nil
            rows = try reader.rows(matching: plan, limit: limit)
        }
        if !uncommitted.keys.isEmpty || uncommitted.deletesEveryRow {
            let keyColumn = plan.schema.primaryKeyIndex
            rows.removeAll { uncommitted.keys.contains($0[keyColumn]) }
            for key in uncommitted.keys {
                guard let values = try currentValues(table: plan.table, key: key) else { continue }
                if plan.matches(values) { rows.append(values) }
            }
            rows.sort { plan.precedes(plan.entry(of: $0), plan.entry(of: $1)) }
        }
        guard windowed else { return rows }
        let start = min(plan.offset, rows.count)
        let end = plan.limit.map { min(start + $0, rows.count) } ?? rows.count
        return Array(rows[start..<end])
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
        let plan = try CompiledQuery(descriptor, table: try registrar.tableIndex(of: Model.self))
        return try FetchedResults(store: self, plan: plan)
    }
}
