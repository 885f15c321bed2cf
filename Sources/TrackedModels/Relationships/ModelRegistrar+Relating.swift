import Foundation

// The registrar's entry points for the program's relating: pointing a to-one at an object
// (inserting it first when the store does not manage it yet), inserting children put in a
// to-many, checking that an insert can take every object it reaches, and a delete rule's
// nullify. What relationships read and who hears of a child is ``Relationships``'.
extension ModelRegistrar {
    /// The program pointed `child`'s to-one column at `target`: a target this store does not
    /// manage yet is inserted first (so that its row precedes the child's). Returns the key the
    /// object shows (`.null` while the database has yet to assign the target's), and the value
    /// the column is written with: that key, or its placeholder (``KeyPlaceholder``), which the
    /// worker replaces by the key in the commit that inserts the target.
    ///
    /// - Throws: ``StoreError`` when the target cannot be related: another store manages it,
    ///   or inserting it is refused (this store has another object of its key). Nothing has
    ///   changed then.
    func userDidRelate(_ child: some TrackedModel, column: Int, to target: some TrackedModel) throws -> (shown: SQLValue, stored: SQLValue) {
        let tracking = target._$tracking
        func property() -> String { "\(type(of: child)).\(child._$schemaColumns[column].property)" }
        if isBeingInserted(target) {
            // A cycle of new objects (an object that points at itself, say): the target's insert
            // is under way, with its request reserved if the database assigns its key.
            let key = target._$primaryKey
            return (key, insertRequest(of: target).map(KeyPlaceholder.value(forInsert:)) ?? key)
        }
        if let registrar = tracking.registrar, registrar !== self {
            throw StoreError(
                code: .notAttached,
                message: "\(property()) cannot point at a \(type(of: target)) that another store manages; fetch it from this store, or insert a new one in it (the relationship was left as it was)"
            )
        }
        if !tracking.isAttached {
            do {
                try userDidInsert(target, table: tableIndex(of: type(of: target)))
            } catch let error as StoreError {
                throw StoreError(
                    code: error.code,
                    message: "\(property()) cannot point at this \(type(of: target)), which the store would insert with it: \(error.message) (the relationship was left as it was)",
                    underlying: error
                )
            }
        }
        guard let request = tracking.insertRequest else { return (tracking.key, tracking.key) }
        relationships.childrenChanged(of: target, childTable: child._$tracking.table, column: column)
        return (.null, KeyPlaceholder.value(forInsert: request))
    }

    /// What an object's column is written with, given the value it shows: for a to-one column
    /// that shows no key while its target's insert waits for one, that key's placeholder.
    func storedValue(of object: any TrackedModel, column: Int, shown: SQLValue) -> SQLValue {
        guard schemas[object._$tracking.table].relationshipColumns.contains(column) else { return shown }
        return storedValue(pointingAt: object._$relatedObject(column: column), shown: shown)
    }

    /// What a to-one column that shows `shown` and points at `target` is written with.
    func storedValue(pointingAt target: (any TrackedModel)?, shown: SQLValue) -> SQLValue {
        guard shown == .null, let target, let request = insertRequest(of: target) else { return shown }
        return KeyPlaceholder.value(forInsert: request)
    }

    /// Inserts a child that the program put in a to-many relationship of a stored object.
    ///
    /// - Throws: ``StoreError`` when the store refuses the child (it has another object of
    ///   its key); nothing was inserted then.
    func insertChild(_ child: any TrackedModel) throws {
        try userDidInsert(child, table: tableIndex(of: type(of: child)))
    }

    /// Reports a change the program made through a property that cannot throw, and that the
    /// store refused: published on ``ModelStore/writeErrors`` and logged, the change undone.
    func refuse(_ error: StoreError) {
        writeBehind.errors.report(error)
    }

    /// Inserts the children an object's to-many relationships were given before it was stored
    /// (those that still point at it).
    func insertPendingChildren(of object: any TrackedModel, table: Int) throws {
        guard !object._$tracking.handedOverChildren else { return }
        for (index, relationship) in schemas[table].relationships.enumerated() {
            for child in object._$pendingChildren(relationship: index)
            where !child._$tracking.isAttached && !isBeingInserted(child) && child._$relatedObject(column: relationship.childColumn) === object {
                try insertChild(child)
            }
        }
    }

    /// Refuses an insert whose pending children hold the key of a row this store already has,
    /// before anything is inserted.
    func checkPendingChildren(of object: any TrackedModel, table: Int) throws {
        guard !object._$tracking.handedOverChildren else { return }
        for (index, relationship) in schemas[table].relationships.enumerated() {
            guard let childTable = try? tableIndex(of: relationship.child) else { continue }
            for child in object._$pendingChildren(relationship: index) where !child._$tracking.isAttached {
                let key = child._$primaryKey
                if key != .null, identityMap.object(table: childTable, key: key) != nil {
                    throw StoreError.duplicateKey(types[childTable], key: key)
                }
            }
        }
    }

    /// Refuses an insert whose to-one relationships point at a new object with the key of a row
    /// this store already has, before anything is inserted.
    func checkTargets(of object: some TrackedModel, table: Int) throws {
        var visited: Set<ObjectIdentifier> = [ObjectIdentifier(object)]
        try checkTargets(of: object, table: table, visited: &visited)
    }

    /// The same for every new object reachable through to-one relationships (each is inserted
    /// with the one that points at it).
    private func checkTargets(of object: any TrackedModel, table: Int, visited: inout Set<ObjectIdentifier>) throws {
        for column in schemas[table].relationshipColumns {
            guard let target = object._$relatedObject(column: column) else { continue }
            if let registrar = target._$tracking.registrar, registrar !== self {
                throw StoreError(
                    code: .notAttached,
                    message: "\(types[table]).\(schemas[table].columns[column].property) points at a \(type(of: target)) that another store manages; fetch it from this store, or insert a new one in it (nothing was inserted)"
                )
            }
            guard !target._$tracking.isAttached, !isBeingInserted(target), visited.insert(ObjectIdentifier(target)).inserted,
                  let targetTable = try? tableIndex(of: type(of: target))
            else { continue }
            let key = target._$primaryKey
            if key != .null, identityMap.object(table: targetTable, key: key) != nil {
                throw StoreError.duplicateKey(types[targetTable], key: key)
            }
            try checkPendingChildren(of: target, table: targetTable)
            try checkTargets(of: target, table: targetTable, visited: &visited)
        }
    }

    /// Inserts what the to-one relationships of an object being inserted point at, when this
    /// store does not manage it yet, and notes the columns that wait for a target's key.
    func insertTargets(of object: some TrackedModel, table: Int) throws {
        for column in schemas[table].relationshipColumns {
            guard let target = object._$relatedObject(column: column) else { continue }
            _ = try userDidRelate(object, column: column, to: target)
        }
    }
}

extension TrackedModel {
    /// The columns of the object's table.
    var _$schemaColumns: [ColumnSchema] { Self._$schema.columns }
}

extension ModelRegistrar {
    /// The children of `parent` through a to-one column of `Child`'s table, read for the
    /// program (its to-many property) or a delete rule (see ``Relationships/children(_:column:of:)``):
    /// the read is noted for dependency capture.
    func children<Child: TrackedModel>(_ type: Child.Type, column: Int, of parent: some TrackedModel) throws -> [Child] {
        let tracking = parent._$tracking
        if tracking.key != .null, let relationship = relationships.relationship(parentTable: tracking.table, child: type, column: column) {
            didAccessChildren(table: tracking.table, key: tracking.key, relationship: relationship)
        }
        return try relationships.children(type, column: column, of: parent)
    }

    /// Points a child's to-one column at nothing, as the program's assignment of `nil` would
    /// (a delete rule's nullify).
    func nullify(_ child: any TrackedModel, column: Int) {
        let tracking = child._$tracking
        let old = tracking.foreignKeys[column] ?? .null
        willRelate(child, column: column, from: child._$relatedObject(column: column), key: old)
        child._$setRelatedObject(nil, column: column)
        tracking.foreignKeys[column] = .null
        if old != .null { userDidSet(child, tracking: tracking, column: column, from: old, to: .null) }
    }
}
