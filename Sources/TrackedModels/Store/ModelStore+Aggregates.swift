extension ModelStore {
    /// A live aggregate of the rows a descriptor matches: see ``LiveAggregate``.
    ///
    /// ```swift
    /// let busy = try store.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
    /// let total = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
    /// print(busy.value, total.value ?? 0)
    /// ```
    ///
    /// - Throws: ``StoreError/Code/unsupportedPredicate`` for a descriptor or a key path with no
    ///   translation, or a descriptor with a `fetchLimit` or a `fetchOffset` past 0 (an
    ///   aggregate is of every matching row).
    public func aggregate<Model: TrackedModel, Value: AggregateValue>(_ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>) throws -> LiveAggregate<Model, Value> {
        try checkOpen("aggregate(_:of:)")
        let (plan, column) = try compile(aggregate, of: descriptor)
        return LiveAggregate(store: self, plan: plan, column: column, aggregate: aggregate, matching: try reads.now(reads.matching(plan, windowed: false)))
    }

    /// The query an aggregate follows, and the position of its column in the query's row.
    func compile<Model: TrackedModel, Value: AggregateValue>(_ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>) throws -> (CompiledQuery, Int?) {
        guard descriptor.fetchLimit == nil, (descriptor.fetchOffset ?? 0) == 0 else {
            throw StoreError(
                code: .unsupportedPredicate,
                message: "an aggregate is of every row a descriptor matches, but this one has a fetchLimit or a fetchOffset; set both to nil"
            )
        }
        let (plan, positions) = try CompiledQuery.compile(
            descriptor, table: registrar.tableIndex(of: Model.self), tableOf: { [registrar] in try registrar.tableIndex(of: $0) },
            reading: aggregate.keyPath.map { [$0] } ?? []
        )
        return (plan, positions.first)
    }
}

extension ModelStore.AsyncReads {
    /// A live aggregate of the rows a descriptor matches; as ``ModelStore/aggregate(_:of:)``.
    ///
    /// ```swift
    /// let busy = try await store.async.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
    /// ```
    public func aggregate<Model: TrackedModel, Value: AggregateValue>(_ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>) async throws -> LiveAggregate<Model, Value> {
        try store.checkOpen("aggregate(_:of:)")
        let (plan, column) = try store.compile(aggregate, of: descriptor)
        // Made in the run that composes the rows, with no await between: no change can fall
        // in a gap.
        return LiveAggregate(store: store, plan: plan, column: column, aggregate: aggregate, matching: try await store.reads.awaited(store.reads.matching(plan, windowed: false)))
    }
}
