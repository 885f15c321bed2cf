public import Foundation

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
        let (plan, positions) = try compileWhole(descriptor, reading: aggregate.keyPath.map { [$0] } ?? [], for: "an aggregate")
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

extension ModelStore {
    /// A live aggregate of the rows a descriptor matches, for each value of a key path: see
    /// ``LiveGroupedAggregate``.
    ///
    /// ```swift
    /// let perList = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>(), groupedBy: \.list?.title)
    /// for list in perList.groups { print(list ?? "No list", perList[list] ?? 0) }
    /// ```
    ///
    /// - Parameters:
    ///   - aggregate: What each group computes: a count, or a column's sum, average, minimum or
    ///     maximum.
    ///   - descriptor: Which rows.
    ///   - keyPath: What groups the rows: a stored property, or one of what a to-one points at.
    ///   - order: The order of ``LiveGroupedAggregate/groups``: `.forward` for ascending (nil
    ///     first), `.reverse` for the reverse.
    /// - Throws: As ``aggregate(_:of:)``; also for a key path with no translation.
    public func aggregate<Model: TrackedModel, Group: ColumnValue & Hashable, Value: AggregateValue>(
        _ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>, groupedBy keyPath: KeyPath<Model, Group>, order: SortOrder = .forward
    ) throws -> LiveGroupedAggregate<Model, Group, Value> {
        try checkOpen("aggregate(_:of:groupedBy:)")
        let (plan, column, group) = try compile(aggregate, of: descriptor, groupedBy: keyPath)
        return LiveGroupedAggregate(
            store: self, plan: plan, column: column, groupColumn: group, aggregate: aggregate, ascending: order == .forward,
            matching: try reads.now(reads.matching(plan, windowed: false))
        )
    }

    /// The query a grouped aggregate follows, and the positions of its column and its group
    /// key in the query's row.
    func compile<Model: TrackedModel, Group: ColumnValue & Hashable, Value: AggregateValue>(
        _ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>, groupedBy keyPath: KeyPath<Model, Group>
    ) throws -> (CompiledQuery, column: Int?, group: Int) {
        let (plan, positions) = try compileWhole(descriptor, reading: [keyPath] + (aggregate.keyPath.map { [$0] } ?? []), for: "an aggregate")
        return (plan, positions.count > 1 ? positions[1] : nil, positions[0])
    }
}

extension ModelStore.AsyncReads {
    /// A live aggregate for each value of a key path; as
    /// ``ModelStore/aggregate(_:of:groupedBy:order:)``.
    ///
    /// ```swift
    /// let perList = try await store.async.aggregate(.count, of: FetchDescriptor<Row>(), groupedBy: \.list?.title)
    /// ```
    public func aggregate<Model: TrackedModel, Group: ColumnValue & Hashable, Value: AggregateValue>(
        _ aggregate: Aggregate<Model, Value>, of descriptor: FetchDescriptor<Model>, groupedBy keyPath: KeyPath<Model, Group>, order: SortOrder = .forward
    ) async throws -> LiveGroupedAggregate<Model, Group, Value> {
        try store.checkOpen("aggregate(_:of:groupedBy:)")
        let (plan, column, group) = try store.compile(aggregate, of: descriptor, groupedBy: keyPath)
        // Made in the run that composes the rows, with no await between: no change can fall
        // in a gap.
        return LiveGroupedAggregate(
            store: store, plan: plan, column: column, groupColumn: group, aggregate: aggregate, ascending: order == .forward,
            matching: try await store.reads.awaited(store.reads.matching(plan, windowed: false))
        )
    }
}
