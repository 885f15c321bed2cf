// Generated code names Observation types, so every file that uses @Tracked sees Observation.
@_exported public import Observation

/// Makes a class a persistent, observable model stored in a SQLite table.
///
/// Each stored property becomes a column, read and written through the store's registrar:
/// a write notifies exactly the subscribers of that column of that row, and is written behind to
/// SQLite. The class conforms to `Observation.Observable`, so `withObservationTracking`,
/// `Observations { }` and SwiftUI see it as they see an `@Observable` class.
///
/// ```swift
/// @Tracked(table: "rows")
/// final class Row {
///     @PrimaryKey var id: Int64
///     var title: String
///     var count: Int
///     @Transient var isSelected = false
/// }
/// ```
///
/// The macro generates:
/// - accessors for each column property, backed by a `_name` stored property;
/// - `static let _$schema`, the ``TableSchema`` (columns in declaration order);
/// - `init(_$row:)` to decode a row, `_$values()` to encode one (`_$value(ofColumn:)` one of its
///   values), `_$assign(_:toColumn:)` to set
///   a value from the database (observed, never written back), and `_$columnIndex(of:)` to map
///   key paths to columns;
/// - `typealias PrimaryKeyValue`, the key's type without optionality;
/// - a memberwise `init(id:title:count:)` when the class declares no initializer;
/// - conformance to ``TrackedModel`` and `Observation.Observable` (isolated to the main actor
///   for a `@MainActor` class).
///
/// A column's type is one of `Bool`, `Int`, `Int64`, `Int32`, `Double`, `String`, `Data`,
/// `Date`, `UUID`, an `Optional` of those, or a type conforming to ``ColumnValue``. An optional
/// integer primary key that is `nil` at insert is assigned by SQLite.
///
/// - Parameter table: The table's name.
@attached(
    member,
    names: named(_$observationRegistrar), named(_$tracking), named(_$schema), named(init(_$row:)),
    named(_$values), named(_$value(ofColumn:)), named(_$assign), named(_$columnIndex), named(_$columnKeyPaths), named(_$chainedKeyPaths), named(_$relatedObject), named(_$setRelatedObject), named(_$primaryKey), named(_$childrenChanged), named(_$pendingChildren), named(PrimaryKeyValue), named(access),
    named(withMutation), named(init)
)
@attached(memberAttribute)
@attached(extension, conformances: TrackedModel, Observable)
public macro Tracked(table: String) = #externalMacro(module: "TrackedMacros", type: "TrackedMacro")

/// Marks the property that is the table's primary key. Exactly one property has it.
///
/// ```swift
/// @PrimaryKey var id: Int64
/// ```
@attached(peer)
public macro PrimaryKey() = #externalMacro(module: "TrackedMacros", type: "MarkerMacro")

/// Keeps a property out of the table: it is not stored and the store's feeds do not hear it,
/// but `Observation` observes it as it would on an `@Observable` class. (`@ObservationIgnored`
/// keeps a property out of both.)
///
/// ```swift
/// @Transient var isSelected = false
/// ```
@attached(peer)
public macro Transient() = #externalMacro(module: "TrackedMacros", type: "MarkerMacro")

/// Stores a property in a column whose name differs from the property's.
///
/// ```swift
/// @Column("created_at") var createdAt: Date
/// ```
@attached(peer)
public macro Column(_ name: String) = #externalMacro(module: "TrackedMacros", type: "MarkerMacro")

/// Declares a to-many relationship: the children whose to-one relationship (the inverse)
/// points at this object. It is not a column: reading it is one query for the children, in
/// primary-key order, and observers of it hear a child join or leave (inserted, deleted, or
/// re-pointed, here or by another process), not the children's other changes.
///
/// ```swift
/// @Tracked(table: "lists")
/// final class TodoList {
///     @PrimaryKey var id: Int64
///     var title: String
///     @Relationship(deleteRule: .cascade, inverse: \Row.list) var rows: [Row] = []
/// }
/// ```
///
/// Assigning the array re-points the children that join (their `list` becomes this list) and
/// those that leave (their `list` becomes `nil`). The delete rule says what deleting this
/// object does to its children: see ``DeleteRule``.
@attached(peer)
public macro Relationship(deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath) = #externalMacro(module: "TrackedMacros", type: "MarkerMacro")

/// Implementation detail of ``Tracked(table:)``: reads and assigns a to-many relationship.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _TrackedToMany() = #externalMacro(module: "TrackedMacros", type: "TrackedToManyMacro")

/// Implementation detail of ``Tracked(table:)``: routes a column property through the registrar.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _TrackedColumn(_ index: Int) = #externalMacro(module: "TrackedMacros", type: "TrackedColumnMacro")

/// Implementation detail of ``Tracked(table:)``: makes a `@Transient` property observable.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _TrackedTransient() = #externalMacro(module: "TrackedMacros", type: "TrackedTransientMacro")
