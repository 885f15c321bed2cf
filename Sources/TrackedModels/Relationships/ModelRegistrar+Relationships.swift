extension ModelRegistrar {
    /// A child whose to-one column waits for its target's key: the database has yet to assign
    /// it. The child is held weakly: a child that goes away no longer needs the key.
    struct WaitingChild {
        weak var child: (any TrackedModel)?
        var column: Int
    }

    /// The target of a to-one relationship: its object in the identity map, or its row loaded
    /// through the store; `nil` when there is no such row (or reading it failed, which the
    /// store logs).
    func relatedObject<Target: TrackedModel>(_ type: Target.Type, key: SQLValue) -> Target? {
        guard let table = try? tableIndex(of: type) else { return nil }
        if let object = object(table: table, key: key) { return object as? Target }
        return loadObject?(table, key) as? Target
    }

    /// The program pointed `child`'s to-one column at `target`: a target this store does not
    /// manage yet is inserted first (so that its row precedes the child's), and the key to
    /// store is returned: `.null` while the database has yet to assign the target's, in which
    /// case the column is written when it does.
    func userDidRelate(_ child: some TrackedModel, column: Int, to target: some TrackedModel) -> SQLValue {
        let tracking = target._$tracking
        if !tracking.isAttached {
            do {
                try userDidInsert(target, table: tableIndex(of: type(of: target)))
            } catch {
                preconditionFailure("\(type(of: child)).\(schemas[child._$tracking.table].columns[column].property): cannot insert the \(type(of: target)) it points at: \(error)")
            }
        }
        precondition(
            tracking.registrar === self,
            "\(type(of: child)).\(schemas[child._$tracking.table].columns[column].property) points at an object of another store; fetch or insert it in this one"
        )
        guard let request = tracking.insertRequest else { return tracking.key }
        childrenWaitingForKey[request, default: []].append(WaitingChild(child: child, column: column))
        return .null
    }

    /// Inserts what the to-one relationships of an object about to be inserted point at, when
    /// this store does not manage it yet, and notes the columns that wait for a target's key.
    func insertTargets(of object: some TrackedModel, table: Int) {
        for column in schemas[table].relationshipColumns {
            guard let target = object._$relatedObject(column: column) else { continue }
            _ = userDidRelate(object, column: column, to: target)
        }
    }

    /// Writes the key the database assigned to an insert into the to-one columns that point at
    /// its object, as the program's own writes.
    func storeKey(_ key: SQLValue, of target: any TrackedModel, forChildrenOf request: UInt64) {
        guard let waiting = childrenWaitingForKey.removeValue(forKey: request) else { return }
        for entry in waiting {
            guard let child = entry.child, child._$tracking.isAttached,
                  child._$relatedObject(column: entry.column) === target
            else { continue }
            let tracking = child._$tracking
            tracking.foreignKeys[entry.column] = key
            userDidSet(child, tracking: tracking, column: entry.column, from: .null, to: key)
        }
    }
}
