public import Foundation

extension ModelStore {
    /// Live results of a descriptor in sections by a key path's value: see
    /// ``SectionedResults``.
    ///
    /// ```swift
    /// let sections = try store.results(for: FetchDescriptor<Row>(sortBy: [SortDescriptor(\.title)]), sectionedBy: \.list?.title)
    /// for section in sections { print(section.key ?? "No list", section.map(\.title)) }
    /// ```
    ///
    /// - Parameters:
    ///   - descriptor: Which rows, and their order within a section.
    ///   - keyPath: The section key: a stored property, or one of what a to-one points at.
    ///   - order: `.forward` for sections in ascending key order (nil first), `.reverse` for
    ///     the reverse.
    /// - Throws: ``StoreError/Code/unsupportedPredicate`` for a descriptor or a key path with no
    ///   translation, or a descriptor with a `fetchLimit` or a `fetchOffset` past 0 (sections
    ///   are of every matching row).
    public func results<Model: TrackedModel, SectionKey: ColumnValue & Hashable>(
        for descriptor: FetchDescriptor<Model>, sectionedBy keyPath: KeyPath<Model, SectionKey>, order: SortOrder = .forward
    ) throws -> SectionedResults<Model, SectionKey> {
        try checkOpen("results(for:sectionedBy:)")
        let (plan, positions) = try compileWhole(descriptor, reading: [keyPath], for: "sectioned results")
        return SectionedResults(store: self, plan: plan, column: positions[0], ascending: order == .forward, matching: try reads.now(reads.matching(plan, windowed: false)))
    }
}

extension ModelStore.AsyncReads {
    /// Live results of a descriptor in sections; as ``ModelStore/results(for:sectionedBy:order:)``.
    ///
    /// ```swift
    /// let sections = try await store.async.results(for: FetchDescriptor<Row>(), sectionedBy: \.list?.title)
    /// ```
    public func results<Model: TrackedModel, SectionKey: ColumnValue & Hashable>(
        for descriptor: FetchDescriptor<Model>, sectionedBy keyPath: KeyPath<Model, SectionKey>, order: SortOrder = .forward
    ) async throws -> SectionedResults<Model, SectionKey> {
        try store.checkOpen("results(for:sectionedBy:)")
        let (plan, positions) = try store.compileWhole(descriptor, reading: [keyPath], for: "sectioned results")
        // Made in the run that composes the rows, with no await between: no change can fall
        // in a gap.
        return SectionedResults(
            store: store, plan: plan, column: positions[0], ascending: order == .forward,
            matching: try await store.reads.awaited(store.reads.matching(plan, windowed: false))
        )
    }
}
