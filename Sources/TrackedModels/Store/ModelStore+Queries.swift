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
        let objects = try objects(Model.self, of: plan, rows: reads.now(reads.matching(plan, windowed: true)))
        try prefetch(descriptor.relationshipKeyPathsForPrefetching, of: objects)
        return objects
    }

    /// Compiles a descriptor for this store's tables.
    func compile<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> CompiledQuery {
        try CompiledQuery(descriptor, table: registrar.tableIndex(of: Model.self)) { [registrar] in try registrar.tableIndex(of: $0) }
    }

    /// Compiles a descriptor for a live form of every row it matches (sections, an aggregate),
    /// with the positions of `keyPaths` in the query's row; throws for a descriptor with a
    /// window, naming `form`.
    func compileWhole<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>, reading keyPaths: [AnyKeyPath], for form: String) throws -> (CompiledQuery, [Int]) {
        guard descriptor.fetchLimit == nil, (descriptor.fetchOffset ?? 0) == 0 else {
            throw StoreError(
                code: .unsupportedPredicate,
                message: "\(form) is of every row a descriptor matches, but this one has a fetchLimit or a fetchOffset; set both to nil"
            )
        }
        return try CompiledQuery.compile(
            descriptor, table: registrar.tableIndex(of: Model.self), tableOf: { [registrar] in try registrar.tableIndex(of: $0) }, reading: keyPaths
        )
    }

    /// How many objects a descriptor matches (within its window), counting changes not yet
    /// flushed.
    ///
    /// ```swift
    /// let n = try store.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
    /// ```
    public func fetchCount<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) throws -> Int {
        try checkOpen("fetchCount")
        return try reads.now(reads.count(compile(descriptor)))
    }

    /// The objects of rows of a query (the table's columns, then its joins').
    func objects<Model: TrackedModel>(_ type: Model.Type, of plan: CompiledQuery, rows: [[SQLValue]]) throws -> [Model] {
        let width = plan.schema.columns.count
        return try rows.map { try object(Model.self, table: plan.table, values: $0.count == width ? $0 : Array($0.prefix(width))) }
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
        return FetchedResults(store: self, plan: plan, matching: try reads.now(reads.matching(plan, windowed: false)))
    }
}
