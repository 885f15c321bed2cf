/// Which changes of a model's table a subscriber hears.
///
/// A subscriber pays only for what it names: bumping one row's `count` reaches the subscribers
/// of that cell, of that row, of the `count` column and of the whole table, and nobody else.
///
/// ```swift
/// store.subscribe(to: .row(42, \Row.count)) { ... }       // one cell
/// store.subscribe(to: .object(row, \Row.count)) { ... }   // the same, by object
/// store.subscribe(to: .row(42, of: Row.self)) { ... }     // every column of row 42, and its deletion
/// store.subscribe(to: .column(\Row.title)) { ... }        // `title` of any row
/// store.subscribe(to: .membership(Row.self)) { ... }      // inserts and deletes
/// store.subscribe(to: .table(Row.self)) { ... }           // everything
/// store.subscribe(to: .children(of: list, \TodoList.rows)) { ... }  // list's rows come and go
/// ```
public struct FeedScope<Model: TrackedModel>: Sendable {
    enum Shape: Sendable, Hashable {
        case cells(key: SQLValue, columns: [Int])
        case row(key: SQLValue)
        case columns([Int])
        case table
        case membership
        case children(key: SQLValue, relationship: Int)
    }

    let shape: Shape

    /// Changes of the named columns of one row, and the row's deletion.
    public static func row(_ key: Model.PrimaryKeyValue, _ keyPath: PartialKeyPath<Model>, _ more: PartialKeyPath<Model>...) -> FeedScope {
        make(key: key.sqlValue, [keyPath] + more)
    }

    /// Changes of every column of one row, and the row's deletion.
    public static func row(_ key: Model.PrimaryKeyValue, of type: Model.Type) -> FeedScope {
        make(key: key.sqlValue, [])
    }

    /// Changes of the named columns of an object's row (all columns when none are named), and
    /// the row's deletion.
    public static func object(_ object: Model, _ keyPaths: PartialKeyPath<Model>...) -> FeedScope {
        make(key: object._$primaryKey, keyPaths)
    }

    /// Changes of the named columns in every row.
    public static func column(_ keyPaths: PartialKeyPath<Model>...) -> FeedScope {
        FeedScope(shape: .columns(keyPaths.map { Model.columnIndex(of: $0) }))
    }

    /// Inserts and deletes of rows.
    public static func membership(_ type: Model.Type) -> FeedScope { FeedScope(shape: .membership) }

    /// Every change of the table: updates of any row, inserts and deletes.
    public static func table(_ type: Model.Type) -> FeedScope { FeedScope(shape: .table) }

    /// Changes of the children of an object's to-many relationship: a child inserted, deleted,
    /// or pointed at the object or away from it, here or by another process; never a child's
    /// other columns. Each event's kind is ``ChangeEvent/Kind/children(_:)``.
    ///
    /// Subscribing reads the children once (one query), and so does each change the feed
    /// tells: another process re-pointing a child this store never loaded is heard by the old
    /// parent through them.
    public static func children<Child>(of object: Model, _ keyPath: KeyPath<Model, [Child]>) -> FeedScope {
        guard let relationship = Model._$schema.relationships.firstIndex(where: { $0.keyPath == keyPath }) else {
            preconditionFailure("\(keyPath) is not a to-many relationship of \(Model.self); name a property declared with @Relationship")
        }
        return FeedScope(shape: .children(key: object._$primaryKey, relationship: relationship))
    }

    private static func make(key: SQLValue, _ keyPaths: [PartialKeyPath<Model>]) -> FeedScope {
        keyPaths.isEmpty
            ? FeedScope(shape: .row(key: key))
            : FeedScope(shape: .cells(key: key, columns: keyPaths.map { Model.columnIndex(of: $0) }))
    }
}
