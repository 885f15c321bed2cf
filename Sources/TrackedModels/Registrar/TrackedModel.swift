public import Observation

/// A class that ``Tracked(table:)`` made persistent. Conform through the macro, not by hand.
///
/// The requirements prefixed `_$` are generated; the store calls them and you need not.
public protocol TrackedModel: AnyObject, Observable {
    /// The type of the primary key, without optionality: `Int64` for `@PrimaryKey var id: Int64?`.
    /// ``ModelStore/find(_:key:)`` and row feed scopes take it, so a key of the wrong type does
    /// not compile.
    associatedtype PrimaryKeyValue: ColumnValue & Hashable & Sendable
    /// The table the model maps onto.
    static var _$schema: TableSchema { get }
    /// Decodes an object from a row whose values follow ``_$schema``'s columns.
    init(_$row row: ModelRow) throws
    /// The object's link to the store that manages it.
    var _$tracking: ModelTracking { get }
    /// The stored values, in column order, read without reporting access.
    func _$values() -> [SQLValue]
    /// One stored value, read without reporting access (`.null` for an index past the columns).
    func _$value(ofColumn index: Int) -> SQLValue
    /// Sets a column's property to a value that comes from the database (or from the store's own
    /// bookkeeping: an increment, an undone transaction). It goes through Observation's
    /// `withMutation` and nothing else: it is never reported to the store as a write.
    func _$assign(_ value: SQLValue, toColumn index: Int) throws
    /// The column a key path names, or `nil` for a key path that is not a column.
    static func _$columnIndex(of keyPath: AnyKeyPath) -> Int?
    /// The key paths of the columns, in column order (`\Row.title`).
    static var _$columnKeyPaths: [AnyKeyPath] { get }
    /// The same from an optional object, in column order (`\Row?.?.title`): appended to a
    /// to-one relationship, they name the target's columns through it (`\Row.list?.title`).
    static var _$chainedKeyPaths: [AnyKeyPath] { get }
    /// The object a to-one relationship's column points at, if the property holds it (not
    /// yet loaded, or not a relationship: `nil`).
    func _$relatedObject(column index: Int) -> (any TrackedModel)?
    /// Puts back the object a to-one relationship's column held (undoing an assignment),
    /// notifying Observation; the store keeps the key.
    func _$setRelatedObject(_ object: (any TrackedModel)?, column index: Int)
    /// Tells Observation that a to-many relationship's children changed.
    func _$childrenChanged(relationship index: Int)
    /// The children a to-many relationship was given before the object was stored: inserting
    /// the object inserts those that still point at it.
    func _$pendingChildren(relationship index: Int) -> [any TrackedModel]
    /// The primary key's stored value (read without going through the other columns).
    var _$primaryKey: SQLValue { get }
}

extension TrackedModel {
    /// The column a key path names; traps with a message for a key path that is not a column.
    static func columnIndex(of keyPath: AnyKeyPath) -> Int {
        guard let index = _$columnIndex(of: keyPath) else {
            preconditionFailure("\(keyPath) is not a stored column of \(Self.self); use a key path to a property that is not @Transient")
        }
        return index
    }
}
