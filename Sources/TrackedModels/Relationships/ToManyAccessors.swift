// What the accessors `@Tracked` generates call for a to-many relationship
// (`@Relationship(inverse: \Row.list) var rows: [Row] = []`).

/// The children of a to-many relationship: the rows whose to-one (`inverse`) points at
/// `parent`, read through the store in primary-key order (children whose key the database has
/// yet to assign follow, in the order they were inserted). A parent the store does not manage
/// shows the array it was given, until a store takes them (a parent deleted since shows none).
public func _$children<Parent: TrackedModel, Child: TrackedModel>(
    of parent: Parent, inverse: ReferenceWritableKeyPath<Child, Parent?>, pending: [Child]
) -> [Child] {
    guard let registrar = parent._$tracking.registrar else { return parent._$tracking.handedOverChildren ? [] : pending }
    do {
        return try registrar.children(Child.self, column: Child.columnIndex(of: inverse), of: parent)
    } catch {
        // A property read cannot throw: the error is published on writeErrors and logged, and
        // the children the store holds objects for are what the property shows meanwhile.
        registrar.refuse(error as? StoreError ?? StoreError(code: .engineFailure, message: "cannot read the children of \(Parent.self): \(error)"))
        return registrar.relationships.loadedChildren(Child.self, column: Child.columnIndex(of: inverse), of: parent)
    }
}

/// Assigns a to-many relationship: children that join point at `parent` (a child the store
/// does not manage yet is inserted), children that leave point at nothing, each through its own
/// to-one (so each is written behind and heard as such). Returns what the parent keeps itself:
/// the array, while the store does not manage it (inserting the parent inserts them).
public func _$setChildren<Parent: TrackedModel, Child: TrackedModel>(
    _ children: [Child], of parent: Parent, inverse: ReferenceWritableKeyPath<Child, Parent?>, replacing pending: [Child]
) -> [Child] {
    let current = _$children(of: parent, inverse: inverse, pending: pending)
    for child in current where !children.contains(where: { $0 === child }) { child[keyPath: inverse] = nil }
    for child in children { child[keyPath: inverse] = parent }
    guard let registrar = parent._$tracking.registrar else {
        // The parent keeps them, to be inserted with it.
        parent._$tracking.handedOverChildren = false
        return children
    }
    for child in children where !child._$tracking.isAttached {
        do {
            try registrar.insertChild(child)
        } catch let error as StoreError {
            // The store refuses it (another object has its key): it stays out, pointing nowhere.
            child[keyPath: inverse] = nil
            registrar.refuse(error)
        } catch {
            preconditionFailure("inserting a \(Child.self) threw \(error), which is not a StoreError")
        }
    }
    return []
}
