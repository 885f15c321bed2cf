public import Foundation

/// What to fetch: which objects of a model (a `#Predicate`), in which order (`SortDescriptor`s),
/// and which window of them, with SwiftData's names.
///
/// ```swift
/// var descriptor = FetchDescriptor<Row>(
///     predicate: #Predicate { $0.count > 10 && $0.title.contains("7") },
///     sortBy: [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.id)]
/// )
/// descriptor.fetchLimit = 20
/// descriptor.fetchOffset = 40
/// let rows = try store.fetch(descriptor)
/// ```
///
/// The predicate and the sort are translated to SQL with bound values; an expression that has
/// no exact translation is an error at fetch that names it, never a silent in-memory scan.
/// Ties are broken by the primary key, so the order is always total.
public struct FetchDescriptor<Model: TrackedModel> {
    /// Which objects match; `nil` for all.
    public var predicate: Predicate<Model>?
    /// The order, first descriptor first.
    public var sortBy: [SortDescriptor<Model>]
    /// At most this many objects; `nil` for no limit.
    public var fetchLimit: Int?
    /// How many matching objects to skip first.
    public var fetchOffset: Int?
    /// Relationships that ``ModelStore/fetch(_:)`` loads for every object it returns, so that
    /// reading them asks the database nothing: a to-one (`\Row.list`, its targets in one
    /// read) or a to-many (`\TodoList.rows`, the children of every list in one read).
    ///
    /// ```swift
    /// var descriptor = FetchDescriptor<TodoList>()
    /// descriptor.relationshipKeyPathsForPrefetching = [\.rows]
    /// for list in try store.fetch(descriptor) { print(list.title, list.rows.count) }  // two reads in all
    /// ```
    ///
    /// Live results (``ModelStore/results(for:)``) load their objects as they are read, and
    /// ignore it.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<Model>] = []

    public init(predicate: Predicate<Model>? = nil, sortBy: [SortDescriptor<Model>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}
