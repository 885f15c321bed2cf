// `store.transaction { }` in the registrar: what beginning and ending a level does (a level that
// fails puts every object, link and key back, and nobody hears of it); the levels and their
// steps are the undo log's (``UndoLog``).
extension ModelRegistrar {
    /// Runs `handler` when the innermost open transaction level fails (after its changes are
    /// undone), again if an enclosing level fails, and when the outermost ends (after its
    /// events are delivered); nothing when no transaction is open.
    func whenTransactionEnds(_ handler: @escaping () -> Void) {
        guard undoLog.isOpen else { return }
        undoLog.whenEnded(handler)
    }

    /// Remembers a cell's value before the innermost level first changed it.
    func recordUndo(_ object: any TrackedModel, column: Int, old: SQLValue) {
        undoLog.recordFirst(.assigned(object, column: column, old: old), of: UndoLog.Cell(object: ObjectIdentifier(object), column: column))
    }

    /// The program is about to point a to-one relationship elsewhere: inside a transaction, the
    /// object it held (a target waiting for its key, say) and its key are remembered, so that
    /// a transaction that throws puts both back.
    func willRelate(_ object: some TrackedModel, column: Int, from target: (any TrackedModel)?, key: SQLValue) {
        if let target { relationships.childrenChanged(of: target, childTable: object._$tracking.table, column: column) }
        guard undoLog.isOpen else { return }
        undoLog.recordFirst(.related(object, column: column, target: target, key: key), of: UndoLog.Cell(object: ObjectIdentifier(object), column: column))
    }

    /// The object of a row the open transaction deleted, still detached and showing that key:
    /// what a live list, which hears the transaction at its end, shows for the row meanwhile.
    /// (An object deleted and inserted again, under this key or another, is another row's.)
    func objectDeleted(inTransaction row: RowReference) -> (any TrackedModel)? {
        guard let object = undoLog.objectDeleted(in: row), !object._$tracking.isAttached, object._$primaryKey == row.key else { return nil }
        return object
    }

    func beginTransaction() {
        let isOutermost = !undoLog.isOpen
        if isOutermost {
            writeBehind.beginTransaction()
            relationships.transactionBegan()
        }
        undoLog.open(snapshot: isOutermost ? nil : writeBehind.transactionSnapshot(), outboxMark: outbox.beginGroup())
    }

    /// Ends the innermost level. On success an inner level merges into its parent, and the
    /// outermost closes its unit for write-behind and delivers its events. On failure the
    /// level's changes are undone: values restored, inserts forgotten, deleted objects attached
    /// again, nothing recorded or delivered.
    func endTransaction(succeeded: Bool) {
        let (level, steps) = undoLog.close(succeeded: succeeded)
        for step in steps { undo(step) }
        if !succeeded, let snapshot = level.snapshot { writeBehind.restoreTransaction(to: snapshot) }
        if !undoLog.isOpen { writeBehind.endTransaction(keeping: succeeded) }
        outbox.endGroup(from: level.outboxMark, keeping: succeeded)
        if !succeeded { relationships.transactionFailed() }
        if !succeeded || !undoLog.isOpen {
            for handler in level.whenEnded { handler() }
            // What they read now includes the enclosing level's changes, undone if it fails.
            if !succeeded, undoLog.isOpen {
                for handler in level.whenEnded { undoLog.whenEnded(handler) }
            }
        }
        if !undoLog.isOpen { relationships.transactionEnded() }
    }

    /// Gives a re-attached object back the values it had when it was detached, and the objects
    /// its to-one relationships held (what the program assigned while it was detached is not
    /// stored, and a link to a new object shows NULL as its value).
    private func restore(_ object: any TrackedModel, to values: [SQLValue], targets: [Int: any TrackedModel] = [:]) {
        for (column, (now, then)) in zip(object._$values(), values).enumerated() where now != then {
            try? object._$assign(then, toColumn: column)
        }
        for column in schemas[object._$tracking.table].relationshipColumns {
            object._$setRelatedObject(targets[column], column: column)
        }
    }

    /// The objects an object's to-one relationships hold, to put back if it comes back.
    func relatedTargets(of object: any TrackedModel, table: Int) -> [Int: any TrackedModel] {
        var targets: [Int: any TrackedModel] = [:]
        for column in schemas[table].relationshipColumns { targets[column] = object._$relatedObject(column: column) }
        return targets
    }

    private func undo(_ step: UndoLog.Step) {
        switch step {
        case .assigned(let object, let column, let old):
            try? object._$assign(old, toColumn: column)
            // A write to an object whose key is not known went into its insert, outside the
            // transaction's unit: put the value back there too.
            if let request = object._$tracking.insertRequest {
                _ = writeBehind.record(.set(old), column: column, ofInsert: request, table: object._$tracking.table)
            }
        case .related(let object, let column, let target, let key):
            relationships.tellWaitingParents(of: object)
            if let target { relationships.childrenChanged(of: target, childTable: object._$tracking.table, column: column) }
            object._$tracking.foreignKeys[column] = key
            object._$setRelatedObject(target, column: column)
            if let request = object._$tracking.insertRequest {
                _ = writeBehind.record(.set(storedValue(of: object, column: column, shown: key)), column: column, ofInsert: request, table: object._$tracking.table)
            }
        case .inserted(let object, let table, let handedOverChildren):
            relationships.tellWaitingParents(of: object)
            detach(object, table: table)
            object._$tracking.handedOverChildren = handedOverChildren
        case .deleted(let object, let table, let key, let values, let targets):
            restore(object, to: values, targets: targets)
            attach(object, table: table, key: key)
            relationships.tellWaitingParents(of: object)
        case .deletedAll(let objects, let waiting, let table):
            for (key, object, values, targets) in objects {
                restore(object, to: values, targets: targets)
                attach(object, table: table, key: key)
                relationships.tellWaitingParents(of: object)
            }
            for (request, entry, values, targets) in waiting {
                restore(entry.object, to: values, targets: targets)
                entry.object._$tracking.attach(to: self, table: table, key: .null, insertRequest: request)
                identityMap.insertUnkeyed(entry.object, table: table, request: request)
                relationships.tellWaitingParents(of: entry.object)
            }
        }
    }
}
