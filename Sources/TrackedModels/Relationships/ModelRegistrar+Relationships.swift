import Foundation

extension ModelRegistrar {
    /// The target of a to-one relationship: its object in the identity map, or its row loaded
    /// through the store; `nil` when there is no such row (or reading it failed, which the
    /// store logs).
    func relatedObject<Target: TrackedModel>(_ type: Target.Type, key: SQLValue) -> Target? {
        guard let table = try? tableIndex(of: type) else { return nil }
        if let object = object(table: table, key: key) { return object as? Target }
        return loadObject?(table, key) as? Target
    }

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
        childrenChanged(of: target, childTable: child._$tracking.table, column: column)
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

    /// Gives the objects that point at new rows the keys those rows were given, where they
    /// still point at them (at the inserting object, or at an object of that key), and tells
    /// the rows' subscribers (objects or not); the file has them already, or will in the
    /// commit that writes them.
    ///
    /// - Parameter inserts: The objects of inserts that waited for their key, by insert
    ///   request, as they were before the keys were given.
    func applyLinks(_ links: [ResolvedLink], inserts: [UInt64: any TrackedModel]) {
        for resolved in links {
            let (link, key) = (resolved.link, resolved.key)
            let object: (any TrackedModel)? = switch link.row {
            case .key(let row): identityMap.object(table: link.table, key: row)
            case .insert(let request): inserts[request]
            }
            if let object {
                let tracking = object._$tracking
                guard tracking.foreignKeys[link.column] == .null, let target = object._$relatedObject(column: link.column),
                      target === inserts[link.request] || target._$tracking.registrar === self && target._$tracking.key == key
                else { continue }
                tracking.foreignKeys[link.column] = key
            }
            // A row that got its own key in this commit is told by that key (not one whose
            // object was detached: another object has its key).
            var known: SQLValue?
            switch link.row {
            case .key(let row): known = row
            case .insert: if let tracking = object?._$tracking, tracking.isAttached { known = tracking.key }
            }
            guard let row = known, row != .null else {
                // A row still waiting for its own key: live results judge it again (its to-one
                // holds the key now, where it showed the target by its placeholder).
                if case .insert(let request) = link.row, object?._$tracking.insertRequest == request {
                    unkeyedRowChanged(table: link.table, request: request)
                }
                continue
            }
            if object == nil {
                // A row no object shows is told where the key is what it shows: its last write
                // still to commit, or the committed one when none follows.
                let cell = CellReference(row: RowReference(table: link.table, key: row), column: link.column)
                let last = writeBehind.lastStoredValue(of: cell)
                let shows = last == key || resolved.isCommitted && last == nil && writeBehind.decidesExistence(of: cell.row) == nil
                guard shows else { continue }
            }
            outbox.postUpdate(table: link.table, key: row, column: link.column, old: .null, new: key, origin: .local)
        }
    }

    /// Tells the observers of a parent whose key the database has yet to assign that a child
    /// joined or left (with no key, it is not heard by key).
    func childrenChanged(of parent: any TrackedModel, childTable: Int, column: Int) {
        let tracking = parent._$tracking
        guard tracking.insertRequest != nil,
              let relationship = memberships?.relationship(parentTable: tracking.table, childTable: childTable, column: column)
        else { return }
        parent._$childrenChanged(relationship: relationship)
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

    /// Tells the parents that an object's to-one relationships point at, and whose keys the
    /// database has yet to assign, that it came or went (they are not heard by key).
    func tellWaitingParents(of child: any TrackedModel) {
        guard memberships != nil, hasUnkeyedInserts else { return }
        let table = child._$tracking.table
        for column in schemas[table].relationshipColumns {
            if let target = child._$relatedObject(column: column) { childrenChanged(of: target, childTable: table, column: column) }
        }
    }

    /// Tells every parent whose key the database has yet to assign, of a table whose to-many
    /// relationships read `childTable`, that its children may have changed.
    func tellWaitingParents(ofChildTable childTable: Int) {
        guard let memberships, hasUnkeyedInserts else { return }
        for link in memberships.parentLinks(ofChildTable: childTable) {
            for (_, entry) in unkeyedInserts where entry.table == link.parentTable {
                entry.object._$childrenChanged(relationship: link.relationship)
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
    /// The children of `parent` through a to-one column of `Child`'s table: its rows that hold
    /// the parent's key, in key order, then the children whose insert waits for its key, in the
    /// order they were inserted (a read of the store shows both).
    ///
    /// The rows are those the last read found while no change of them was told since (their
    /// objects, when all are alive), else read through the store. A read is recorded, so that
    /// another process re-pointing one of them reaches the parent's observers; a read that
    /// failed (or that PostgreSQL has yet to answer) is not, and throws.
    func children<Child: TrackedModel>(_ type: Child.Type, column: Int, of parent: some TrackedModel) throws -> [Child] {
        guard let childTable = try? tableIndex(of: type) else { return [] }
        let parentTracking = parent._$tracking
        var found: [Child] = []
        if parentTracking.key != .null {
            let relationship = memberships?.relationship(parentTable: parentTracking.table, childTable: childTable, column: column)
            if let relationship {
                didAccessChildren(table: parentTracking.table, key: parentTracking.key, relationship: relationship)
            }
            let recorded = relationship.flatMap {
                memberships?.recordedChildren(parentTable: parentTracking.table, relationship: $0, parentKey: parentTracking.key)
            }
            let alive = recorded?.keys.compactMap { object(table: childTable, key: $0) as? Child }
            withExtendedLifetime(recorded?.held) {}
            if let recorded, let alive, alive.count == recorded.keys.count {
                found = alive
            } else {
                found = try (loadChildren?(childTable, column, parentTracking.key) ?? []).compactMap { $0 as? Child }
                if let relationship {
                    memberships?.didRead(
                        parentTable: parentTracking.table, relationship: relationship, parentKey: parentTracking.key,
                        children: found.map(rowKey(of:))
                    )
                }
            }
        }
        if let request = parentTracking.insertRequest {
            // The parent has no key yet: its children are the rows written with its key's
            // placeholder.
            for row in writeBehind.rowsLinking(toInsert: request, table: childTable, column: column) {
                let child: (any TrackedModel)? = switch row {
                case .key(let key): identityMap.object(table: childTable, key: key) ?? loadObject?(childTable, key)
                case .insert(let request): unkeyedInserts[request]?.object
                }
                if let child = child as? Child, !found.contains(where: { $0 === child }) { found.append(child) }
            }
        }
        return found
    }

    /// The children of a parent that the store holds objects for, in key order (those whose
    /// key the database has yet to assign last): what a to-many shows when reading the rest
    /// failed.
    func loadedChildren<Child: TrackedModel>(_ type: Child.Type, column: Int, of parent: some TrackedModel) -> [Child] {
        guard let childTable = try? tableIndex(of: type) else { return [] }
        let key = parent._$tracking.key
        let keyed = identityMap.objects(table: childTable).filter { entry in
            let foreignKey = entry.object._$tracking.foreignKeys[column] ?? .null
            return key != .null ? foreignKey == key : entry.object._$relatedObject(column: column) === parent
        }
        let waiting = unkeyedInserts.sorted { $0.key < $1.key }.map(\.value).filter { entry in
            entry.table == childTable && entry.object._$relatedObject(column: column) === parent
        }
        return keyed.sorted { SQLValue.compare($0.key, $1.key) == .orderedAscending }.compactMap { $0.object as? Child }
            + waiting.compactMap { $0.object as? Child }
    }

    /// Reads and records the children of a parent's to-many relationship, for a feed of them:
    /// a later change by another process that does not tell the child's old parent is then
    /// still heard (see ``Memberships``).
    func recordChildren(of parent: RowReference, relationship: Int) {
        let schema = schemas[parent.table].relationships[relationship]
        guard parent.key != .null, let memberships, let childTable = try? tableIndex(of: schema.child) else { return }
        guard let children = try? loadChildren?(childTable, schema.childColumn, parent.key) else { return }
        memberships.didRead(
            parentTable: parent.table, relationship: relationship, parentKey: parent.key, children: children.map(rowKey(of:)), answersReads: false
        )
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
