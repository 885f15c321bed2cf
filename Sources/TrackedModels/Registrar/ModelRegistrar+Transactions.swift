// `store.transaction { }` in the registrar: each level's undo log, and what ending it does (a
// level that fails puts every object, link and key back, and nobody hears of it).
extension ModelRegistrar {
    /// One open level of `store.transaction { }`.
    struct TransactionLevel {
        /// The transaction's unit as the level found it (`nil` for the outermost level).
        var snapshot: PendingChanges.Unit?
        /// Where the level's events start in the outbox's log.
        var outboxMark: Int
        /// Where the level's steps start in the undo log.
        var undoStart: Int
        /// The cells whose value before this level is already in the undo log: undoing needs
        /// only the first, so a million increments in a transaction keep one step.
        var cellsSaved: Set<SavedCell> = []
        /// What reads made during the level (live results) do to show again what the store
        /// shows once it ends: they took in part of its changes, which its events (the net
        /// change of the whole transaction, or none if it fails) do not tell them from.
        var whenEnded: [() -> Void] = []
    }

    /// Runs `handler` when the innermost open transaction level fails (after its changes are
    /// undone), again if an enclosing level fails, and when the outermost ends (after its
    /// events are delivered); nothing when no transaction is open.
    func whenTransactionEnds(_ handler: @escaping () -> Void) {
        guard !transactionLevels.isEmpty else { return }
        transactionLevels[transactionLevels.count - 1].whenEnded.append(handler)
    }

    struct SavedCell: Hashable {
        var object: ObjectIdentifier
        var column: Int
    }

    /// Remembers a cell's value before the innermost level first changed it.
    func recordUndo(_ object: any TrackedModel, column: Int, old: SQLValue) {
        let cell = SavedCell(object: ObjectIdentifier(object), column: column)
        guard transactionLevels[transactionLevels.count - 1].cellsSaved.insert(cell).inserted else { return }
        undoLog.append(.assigned(object, column: column, old: old))
    }

    /// The program is about to point a to-one relationship elsewhere: inside a transaction, the
    /// object it held (a target waiting for its key, say) and its key are remembered, so that
    /// a transaction that throws puts both back.
    func willRelate(_ object: some TrackedModel, column: Int, from target: (any TrackedModel)?, key: SQLValue) {
        if let target { childrenChanged(of: target, childTable: object._$tracking.table, column: column) }
        guard !transactionLevels.isEmpty else { return }
        let cell = SavedCell(object: ObjectIdentifier(object), column: column)
        guard transactionLevels[transactionLevels.count - 1].cellsSaved.insert(cell).inserted else { return }
        undoLog.append(.related(object, column: column, target: target, key: key))
    }

    /// How to take back one change of a transaction that failed.
    enum UndoStep {
        case assigned(any TrackedModel, column: Int, old: SQLValue)
        /// A to-one relationship pointed elsewhere: the object it held, and its key.
        case related(any TrackedModel, column: Int, target: (any TrackedModel)?, key: SQLValue)
        /// An object inserted, and whether the store had taken its pending children before.
        case inserted(any TrackedModel, table: Int, handedOverChildren: Bool)
        /// An object deleted, with its values then: undoing also takes back what was assigned
        /// to it while it was detached.
        case deleted(any TrackedModel, table: Int, key: SQLValue, values: [SQLValue], targets: [Int: any TrackedModel])
        case deletedAll(
            [(key: SQLValue, object: any TrackedModel, values: [SQLValue], targets: [Int: any TrackedModel])],
            waiting: [(request: UInt64, entry: UnkeyedInsert, values: [SQLValue])],
            table: Int
        )
    }

    /// The object of a row the open transaction deleted, still detached and showing that key:
    /// what a live list, which hears the transaction at its end, shows for the row meanwhile.
    /// (An object deleted and inserted again, under this key or another, is another row's.)
    func objectDeleted(inTransaction row: RowReference) -> (any TrackedModel)? {
        if deletedInTransaction == nil {
            var deleted: [RowReference: any TrackedModel] = [:]
            for step in undoLog {
                switch step {
                case .deleted(let object, let table, let key, _, _):
                    deleted[RowReference(table: table, key: key)] = object
                case .deletedAll(let objects, _, let table):
                    for entry in objects { deleted[RowReference(table: table, key: entry.key)] = entry.object }
                default:
                    continue
                }
            }
            deletedInTransaction = deleted
        }
        guard let object = deletedInTransaction?[row], !object._$tracking.isAttached, object._$primaryKey == row.key else { return nil }
        return object
    }

    func beginTransaction() {
        if transactionLevels.isEmpty {
            writeBehind.beginTransaction()
            memberships?.startTracking()
        }
        transactionLevels.append(TransactionLevel(
            snapshot: transactionLevels.isEmpty ? nil : writeBehind.transactionSnapshot(),
            outboxMark: outbox.beginGroup(),
            undoStart: undoLog.count
        ))
    }

    /// Ends the innermost level. On success an inner level merges into its parent, and the
    /// outermost closes its unit for write-behind and delivers its events. On failure the
    /// level's changes are undone: values restored, inserts forgotten, deleted objects attached
    /// again, nothing recorded or delivered.
    func endTransaction(succeeded: Bool) {
        let level = transactionLevels.removeLast()
        if !succeeded {
            for step in undoLog[level.undoStart...].reversed() { undo(step) }
            undoLog.removeSubrange(level.undoStart...)
            if let snapshot = level.snapshot { writeBehind.restoreTransaction(to: snapshot) }
        } else if !transactionLevels.isEmpty {
            // The inner level's first values are the outer level's too, where it had none.
            transactionLevels[transactionLevels.count - 1].cellsSaved.formUnion(level.cellsSaved)
            transactionLevels[transactionLevels.count - 1].whenEnded += level.whenEnded
        }
        if transactionLevels.isEmpty {
            undoLog.removeAll()
            writeBehind.endTransaction(keeping: succeeded)
        }
        outbox.endGroup(from: level.outboxMark, keeping: succeeded)
        // Observation heard the children's changes as they were made: the parents told then
        // have their objects' observers told that they are taken back (feeds heard nothing of
        // them, the level's events being dropped).
        if !succeeded, let memberships {
            memberships.transactionFailed()
            for table in memberships.touchedTables.sorted() { tellWaitingParents(ofChildTable: table) }
        }
        if !succeeded || transactionLevels.isEmpty {
            for handler in level.whenEnded { handler() }
            // What they read now includes the enclosing level's changes, undone if it fails.
            if !succeeded, !transactionLevels.isEmpty { transactionLevels[transactionLevels.count - 1].whenEnded += level.whenEnded }
        }
        if transactionLevels.isEmpty { memberships?.stopTracking() }
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

    private func undo(_ step: UndoStep) {
        switch step {
        case .assigned(let object, let column, let old):
            try? object._$assign(old, toColumn: column)
            // A write to an object whose key is not known went into its insert, outside the
            // transaction's unit: put the value back there too.
            if let request = object._$tracking.insertRequest {
                _ = writeBehind.record(.set(old), column: column, ofInsert: request, table: object._$tracking.table)
            }
        case .related(let object, let column, let target, let key):
            tellWaitingParents(of: object)
            if let target { childrenChanged(of: target, childTable: object._$tracking.table, column: column) }
            object._$tracking.foreignKeys[column] = key
            object._$setRelatedObject(target, column: column)
            if let request = object._$tracking.insertRequest {
                _ = writeBehind.record(.set(storedValue(of: object, column: column, shown: key)), column: column, ofInsert: request, table: object._$tracking.table)
            }
        case .inserted(let object, let table, let handedOverChildren):
            tellWaitingParents(of: object)
            detach(object, table: table)
            object._$tracking.handedOverChildren = handedOverChildren
        case .deleted(let object, let table, let key, let values, let targets):
            restore(object, to: values, targets: targets)
            attach(object, table: table, key: key)
            tellWaitingParents(of: object)
        case .deletedAll(let objects, let waiting, let table):
            for (key, object, values, targets) in objects {
                restore(object, to: values, targets: targets)
                attach(object, table: table, key: key)
            }
            for (request, entry, values) in waiting {
                restore(entry.object, to: values)
                entry.object._$tracking.attach(to: self, table: table, key: .null, insertRequest: request)
                unkeyedInserts[request] = entry
            }
        }
    }
}
