// What the accessors `@Tracked` generates call for a to-one relationship (`var list: TodoList?`):
// the overloads of ColumnAccessors.swift for a property whose type is an optional model.
//
// The column holds the target's key. The property's backing storage caches the target object
// once loaded; the key itself lives in the object's ``ModelTracking``, so that a row read from
// the database does not load what it points at until the program reads the property.

/// A target's key: the one its store knows it by, else the key it was made with (`.null` while
/// the database has yet to assign it).
func foreignKey(of target: some TrackedModel) -> SQLValue {
    let tracking = target._$tracking
    return tracking.isAttached ? tracking.key : target._$primaryKey
}

/// Keeps the key a to-one column holds in the database; the target object is loaded when read.
public func _$decode<Target: TrackedModel>(_ value: SQLValue, current: Target?, column: Int, tracking: ModelTracking) throws -> Target? {
    _ = try Target.PrimaryKeyValue?(sqlValue: value)
    tracking.foreignKeys[column] = value
    guard let current, value != .null, foreignKey(of: current) == value else { return nil }
    return current
}

/// The key a to-one relationship stores. A stored object's tracking keeps it (`.null` while the
/// target waits for the key the database assigns); an object not yet inserted stores its
/// target's.
public func _$storedValue<Target: TrackedModel>(_ value: Target?, column: Int, tracking: ModelTracking) -> SQLValue {
    guard !tracking.isAttached, let value else { return tracking.foreignKeys[column] ?? .null }
    return foreignKey(of: value)
}

/// The target of a to-one relationship: the cached object, or the row its key names, loaded
/// through the store (identity-mapped) and cached.
///
/// A cached target that has left the store (its row deleted), or whose key is no longer the
/// one stored, is looked up again by key; an object that has left its store keeps what it had.
public func _$read<Target: TrackedModel>(_ value: Target?, column: Int, tracking: ModelTracking, cache: (Target?) -> Void) -> Target? {
    guard let registrar = tracking.registrar else { return value }
    let key = tracking.foreignKeys[column] ?? .null
    if let value, value._$tracking.isAttached, foreignKey(of: value) == key { return value }
    let target = key == .null ? nil : registrar.relationships.target(Target.self, key: key)
    if target !== value { cache(target) }
    return target
}

/// Puts back the object a to-one relationship held. Used by generated code.
public func _$setRelatedObject<Target: TrackedModel>(_ object: (any TrackedModel)?, in storage: inout Target?) {
    storage = object as? Target
}

/// The object a to-one relationship points at, if it holds one.
public func _$relatedObject<Target: TrackedModel>(_ value: Target?) -> (any TrackedModel)? {
    value
}

/// The generated setter's test for a to-one relationship: the same object, or, while the
/// target is not loaded, the key the column holds (`nil` over no key, or an object of that key).
public func _$isSameStoredValue<Target: TrackedModel>(_ old: Target?, _ new: Target?, column: Int, tracking: ModelTracking) -> Bool {
    guard old == nil else { return old === new }
    let key = tracking.foreignKeys[column] ?? .null
    guard let new else { return key == .null }
    return key != .null && foreignKey(of: new) == key
}

extension ModelTracking {
    /// Reports the program's assignment of a to-one relationship. Only the generated setter
    /// calls this.
    ///
    /// A target the store does not manage yet is inserted with it; a target whose key the
    /// database has yet to assign is written as that key's placeholder, which the commit that
    /// inserts the target replaces by the key. A target the store cannot relate (another
    /// store's object, or a new one with the key of an object this store has) leaves the
    /// relationship as it was, and the error is published on ``ModelStore/writeErrors``.
    public func userDidSet<Target: TrackedModel>(_ object: some TrackedModel, column: Int, from oldValue: Target?, to newValue: Target?) {
        guard let registrar else { return }
        let old = foreignKeys[column] ?? .null
        let oldStored = registrar.storedValue(pointingAt: oldValue, shown: old)
        let new: (shown: SQLValue, stored: SQLValue)
        do {
            new = try newValue.map { try registrar.userDidRelate(object, column: column, to: $0) } ?? (.null, .null)
        } catch let error as StoreError {
            object._$setRelatedObject(oldValue, column: column)
            registrar.refuse(error)
            return
        } catch {
            preconditionFailure("relating \(type(of: object)) threw \(error), which is not a StoreError")
        }
        registrar.willRelate(object, column: column, from: oldValue, key: old)
        foreignKeys[column] = new.shown
        guard oldStored != new.stored else { return }
        registrar.userDidSet(object, tracking: self, column: column, from: old, to: new.shown, storing: new.stored)
    }
}

extension ModelRow {
    /// Decodes a to-one relationship's column: checks that it holds a key of the target's type,
    /// and leaves the target to be loaded when the property is read (the generated initializer
    /// hands the keys to the object's tracking: ``ModelTracking/adoptForeignKeys(from:)``).
    public func decode<Target: TrackedModel>(at index: Int) throws -> Target? {
        let _: Target.PrimaryKeyValue? = try decode(at: index)
        return nil
    }
}
