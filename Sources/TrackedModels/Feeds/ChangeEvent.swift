/// One column's change within a ``ChangeEvent``.
public struct ColumnChange: Sendable, Hashable {
    /// The column's name in the table.
    public let column: String
    /// The column's position in the model's ``TableSchema``.
    public let index: Int
    /// The value before (`.null` for an insert).
    public let old: SQLValue
    /// The value after (`.null` for a delete).
    public let new: SQLValue
}

/// What changed in one row of a table, as a feed delivers it.
///
/// ```swift
/// let token = store.subscribe(to: .row(42, \Row.count)) { event in
///     if let count = event.change(of: \Row.count) { print(count.old, "→", count.new) }
/// }
/// ```
public struct ChangeEvent: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// Columns of an existing row changed.
        case update
        /// The row was inserted; ``ChangeEvent/changes`` holds every column.
        case insert
        /// The row was deleted.
        case delete
        /// The table changed as a whole (`deleteAll`, a bulk insert, or another process's
        /// changes the store fell behind) and the store reloaded: re-read whatever you show.
        /// The key is `.null`.
        case reset
        /// The children of one of the row's to-many relationships changed, here or in another
        /// process: one was inserted, deleted, or pointed at the row or away from it (never a
        /// child's other columns). The value names the relationship's property;
        /// ``ChangeEvent/changes`` is empty.
        case children(String)
    }

    /// The table's name.
    public let table: String
    /// The row's primary key (`.null` for a ``Kind/reset``).
    public let key: SQLValue
    public let kind: Kind
    /// The changed columns, in column order, each with its old and new value.
    public let changes: [ColumnChange]
    public let origin: ChangeOrigin

    /// The typed old and new value of a column, or `nil` when it did not change.
    ///
    /// ```swift
    /// event.change(of: \Row.count)  // (old: 0, new: 1)
    /// ```
    @inlinable
    public func change<Model: TrackedModel, Value: ColumnValue>(of keyPath: KeyPath<Model, Value>) -> (old: Value, new: Value)? {
        guard Model._$schema.name == table,
              let index = Model._$columnIndex(of: keyPath),
              let change = changes.first(where: { $0.index == index }),
              let old = try? Value(sqlValue: change.old),
              let new = try? Value(sqlValue: change.new)
        else { return nil }
        return (old, new)
    }

    /// Whether a column is among the changes.
    @inlinable
    public func changed<Model: TrackedModel>(_ keyPath: PartialKeyPath<Model>) -> Bool {
        guard Model._$schema.name == table, let index = Model._$columnIndex(of: keyPath) else { return false }
        return changes.contains { $0.index == index }
    }
}
