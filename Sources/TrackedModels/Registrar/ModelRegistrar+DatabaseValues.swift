// The registrar's entry points for values that come from the database: what a commit produced
// (keys, links, counters), other connections' changes, rows read back, and what discarding
// changes undid. They reach objects through `_$assign`, which only notifies Observation, and
// are never recorded as writes.
extension ModelRegistrar {
    /// Applies what a commit of this store's changes produced: keys the database assigned, rows
    /// inserted in bulk, and committed counter totals (which include other processes' increments, so those are
    /// heard as `.external`).
    ///
    /// Everything is applied before anyone hears anything: a handler that writes to an object
    /// of the commit finds it with its key, and one that reads a link finds its target.
    func applyCommitted(_ finished: WriteBehind.Finished) {
        let mark = outbox.beginGroup()
        // The objects of the inserts the commit gave keys, found before they get them: the
        // links' targets, and the links' rows that waited for their own key.
        let inserted = finished.links.isEmpty ? [:] : identityMap.unkeyed.mapValues(\.object)
        for (request, key) in finished.assignedKeys.sorted(by: { $0.key < $1.key }) {
            assignKey(key, toInsert: request)
        }
        if !finished.links.isEmpty { applyLinks(finished.links, inserts: inserted) }
        // Rows no object holds were inserted in bulk: the table's subscribers re-read.
        if let table = finished.bulkInsertedTable { outbox.postReset(table: table, origin: .local) }
        for (cell, value) in finished.counters {
            guard let object = identityMap.object(table: cell.row.table, key: cell.row.key) else { continue }
            assign(value, to: object, cell: cell, origin: .external)
        }
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Gives the objects that point at new rows the keys those rows were given, where they
    /// still point at them (at the inserting object, or at an object of that key), and tells
    /// the rows' subscribers (objects or not); the file has them already, or will in the
    /// commit that writes them.
    ///
    /// - Parameter inserts: The objects of inserts that waited for their key, by insert
    ///   request, as they were before the keys were given.
    private func applyLinks(_ links: [ResolvedLink], inserts: [UInt64: any TrackedModel]) {
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

    /// Gives an inserted object the key the database assigned: it joins the identity map and
    /// its subscribers hear the insert (changes made while the insert was in flight change the
    /// keyed row by now). Does nothing the second time.
    func assignKey(_ key: SQLValue, toInsert request: UInt64) {
        guard let (object, table) = identityMap.removeUnkeyed(request: request) else { return }
        let mark = outbox.beginGroup()
        defer {
            // Live results let go of its row by its key's placeholder; the insert brings it
            // back by its key.
            unkeyedRowChanged(table: table, request: request)
            outbox.endGroup(from: mark, keeping: true)
        }
        try? object._$assign(key, toColumn: primaryKeyColumns[table])
        let row = RowReference(table: table, key: key)
        guard identityMap.object(table: table, key: key) == nil, !writeBehind.decidesRow(row, afterInsert: request) else {
            // The program wrote that key itself: another object has it (an insert of that key,
            // which the database refuses now that the row exists), or a queued change decides
            // the row: an insert of that key still queued (one whose object was deleted, and the
            // delete discarded, shows the row without an object), or a delete made after this
            // insert. That change keeps the row; this object only learns its key.
            if relationships.hasParents(table: table) {
                let values = object._$values()
                relationships.childChanged(table: table, old: { values[$0] }, new: { _ in .null })
            }
            object._$tracking.detach()
            return
        }
        attach(object, table: table, key: key)
        outbox.postInsert(table: table, key: key, values: object._$values(), origin: .local)
    }

    /// Applies what other connections committed: one event per subscriber and row, origin
    /// `.external`. A cell with a local assignment not yet committed keeps it (it commits later
    /// and wins, as last writer); a counter with increments not yet committed shows the
    /// committed value plus them. Rows the store holds no object for reach their subscribers
    /// with `.null` as the old values.
    func applyExternal(_ batch: ExternalChangeBatch) {
        let mark = outbox.beginGroup()
        for change in batch.rows {
            let row = RowReference(table: change.table, key: change.key)
            let object = identityMap.object(table: change.table, key: change.key)
            // A row this store deleted is gone for it, whatever others do to it meanwhile.
            let isDeletedHere = object == nil && writeBehind.deletes(row)
            // The program's updates and deletes of a row that is gone have no row left (but
            // those after its own insert of the row are for that insert).
            if change.values == nil { writeBehind.dropChanges(of: row) }
            guard let object else {
                // A row this store deleted, or inserts (not yet committed), shows what this
                // store made of it, whatever others do to it meanwhile.
                if isDeletedHere || writeBehind.decidesExistence(of: row) == true { continue }
                // What subscribers hear is the row as this store shows it: with its changes still
                // pending (a refused one, say, made to the row before another process changed it).
                let values = writeBehind.uncommittedValues(of: row, over: change.values)
                if let committed = change.values { deliveredRows[row] = committed }
                switch change.kind {
                case .insert: outbox.postInsert(table: change.table, key: change.key, values: values ?? [], origin: .external)
                case .delete: outbox.postDeleteOfUnknownRow(table: change.table, key: change.key, origin: .external)
                case .update:
                    // A cell an assignment not yet committed will overwrite shows that still.
                    for column in change.columns where writeBehind.overlay(change.values?[column] ?? .null, for: CellReference(row: row, column: column)) != nil {
                        outbox.postUpdateOfUnknownRow(table: change.table, key: change.key, column: column, new: values?[column] ?? .null, origin: .external)
                    }
                }
                continue
            }
            guard let values = change.values else {
                // A row this store inserts, not yet committed, is created by that insert.
                if writeBehind.decidesExistence(of: row) == true { continue }
                rowWentAway(object, table: change.table, origin: .external)
                continue
            }
            for column in change.columns where column != primaryKeyColumns[change.table] {
                let cell = CellReference(row: row, column: column)
                guard let value = writeBehind.overlay(values[column], for: cell) else { continue }
                assign(value, to: object, cell: cell, origin: .external)
            }
        }
        outbox.endGroup(from: mark, keeping: true)
        deliveredRows.removeAll()
    }

    /// The committed values of a row no object holds, as read with the external change being
    /// delivered; nil for any other row, and once the delivery is over.
    func deliveredCommittedValues(of row: RowReference) -> [SQLValue]? {
        deliveredRows.isEmpty ? nil : deliveredRows[row]
    }

    /// Applies rows read back after a reset or a discard: objects take the committed values
    /// (overlaid with what is still pending), objects whose row is gone are detached.
    ///
    /// - Parameter held: Which of this store's batches in flight `rows` hold already (see
    ///   ``CommitProgress``); none for rows the worker read.
    func applyReloaded(table: Int, rows: [(key: SQLValue, values: [SQLValue]?)], held: CommitProgress = CommitProgress(), announcingReset: Bool, origin: ChangeOrigin) {
        let mark = outbox.beginGroup()
        for (key, values) in rows {
            let row = RowReference(table: table, key: key)
            // Gone after another connection's changes heard as a whole table: the program's
            // updates and deletes of it have no row left (as when a delete is heard row by row),
            // whether an object shows the row or not (those after its own insert of the row stay).
            if announcingReset, values == nil { writeBehind.dropChanges(of: row) }
            guard let object = identityMap.object(table: table, key: key) else {
                // No object shows it, but a parent may list it (a discarded change re-pointed it).
                if relationships.hasParents(table: table) {
                    let current = writeBehind.uncommittedValues(of: row, over: values, held: held)
                    relationships.childChanged(table: table, key: key, old: { _ in SQLValue?.none }, new: { current?[$0] ?? .null }, origin: origin)
                }
                continue
            }
            // What the object shows is the committed row with every change still pending or in
            // flight applied, not what it showed before (a discarded change's values, say); a row
            // this store inserts, not yet committed, is its insert and what followed it.
            guard let current = writeBehind.uncommittedValues(of: row, over: values, held: held) else {
                // Gone, unless a delete of this store's takes it away (when that commits).
                if values == nil { rowWentAway(object, table: table, origin: origin) }
                continue
            }
            for column in current.indices where column != primaryKeyColumns[table] {
                assign(current[column], to: object, cell: CellReference(row: row, column: column), origin: origin)
            }
            showPendingTargets(of: object, table: table)
        }
        if announcingReset { outbox.postReset(table: table, origin: origin) }
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Detaches the object of a row the database no longer has, drops its changes not yet
    /// handed to the worker (there is no row left for them), and tells subscribers it is gone.
    private func rowWentAway(_ object: any TrackedModel, table: Int, origin: ChangeOrigin) {
        let key = object._$tracking.key
        let old = object._$values()
        // (A row of this key inserted again in the same delivery is heard as an update of the
        // cells that differ: see pointsAtANewObject.)
        let pointedAtANewObject = pointsAtANewObject(object, table: table)
        relationships.tellWaitingParents(of: object)
        detach(object, table: table)
        writeBehind.dropChanges(of: RowReference(table: table, key: key))
        outbox.postDelete(table: table, key: key, values: old, origin: origin)
        if pointedAtANewObject { outbox.postReevaluation(table: table, key: key, origin: origin) }
    }

    /// Puts an object back as it was before a discarded insert: detached, and gone for its
    /// subscribers.
    ///
    /// - Parameter committed: The row of the object's key as it shows without the insert (as
    ///   committed, with what is still queued), if there is one: subscribers then hear the row
    ///   go back to it rather than go away.
    private func forgetInsert(of object: any TrackedModel, table: Int, shown committed: [SQLValue]?) {
        let key = object._$tracking.key
        let values = object._$values()
        relationships.tellWaitingParents(of: object)
        detach(object, table: table)
        guard key != .null else {
            relationships.childChanged(table: table, old: { values[$0] }, new: { _ in .null })
            return
        }
        guard let committed else {
            outbox.postDelete(table: table, key: key, values: values, origin: .local)
            return
        }
        let mark = outbox.beginGroup()
        for column in values.indices where values[column] != committed[column] {
            outbox.postUpdate(table: table, key: key, column: column, old: values[column], new: committed[column], origin: .local)
        }
        if pointsAtANewObject(object, table: table) { outbox.postReevaluation(table: table, key: key) }
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Whether an object's to-one points at a new object whose key the database has yet to
    /// assign. Such a cell shows NULL, as the row that takes the object's place may: that the
    /// row no longer reaches the new object is then no cell's change, and live results, whose
    /// join reached it, must be told to judge the row again.
    private func pointsAtANewObject(_ object: any TrackedModel, table: Int) -> Bool {
        schemas[table].relationshipColumns.contains { column in
            object._$relatedObject(column: column).flatMap(insertRequest(of:)) != nil
        }
    }

    /// Tells subscribers what a row a discard may have brought back shows, read after the
    /// discard: that it is there, or, where a discarded insert had shown it (`shown`), that the
    /// row it showed is gone, or shows the row the database holds instead (the cells that
    /// differ; live results judge it again, as a to-one that reached a new object may show NULL
    /// before and after); nothing when an object shows it by now, unless `objectsMadeSince`:
    /// the row was read later, and an object a read made for it meanwhile (`find`, say) told
    /// nobody (one the program inserted since, still pending, was heard when inserted).
    func announceRowRestored(_ row: RowReference, values: [SQLValue]?, shown: [SQLValue]?, objectsMadeSince: Bool = false) {
        if identityMap.object(table: row.table, key: row.key) != nil {
            guard objectsMadeSince, writeBehind.decidesExistence(of: row) != true else { return }
        }
        let mark = outbox.beginGroup()
        defer { outbox.endGroup(from: mark, keeping: true) }
        switch (shown, values) {
        case (nil, nil): break
        case (let shown?, nil): outbox.postDelete(table: row.table, key: row.key, values: shown, origin: .local)
        case (nil, let values?): outbox.postInsert(table: row.table, key: row.key, values: values, origin: .local)
        case (let shown?, let values?):
            for column in values.indices where shown[column] != values[column] {
                outbox.postUpdate(table: row.table, key: row.key, column: column, old: shown[column], new: values[column], origin: .local)
            }
            outbox.postReevaluation(table: row.table, key: row.key)
        }
    }

    /// Tells the subscribers of a row that no object showed when the discard was made (live
    /// results among them) that the cells a discarded update had shown are back to what the row
    /// holds now: `current`, committed with what is still pending. (A row an object shows is
    /// reloaded into it; an object a read made for the row since told nobody.)
    func announceUndone(_ row: RowReference, shown: [Int: DiscardedChanges.ShownCell], current: [SQLValue]?) {
        guard let current else { return }
        let mark = outbox.beginGroup()
        for (column, cell) in shown.sorted(by: { $0.key < $1.key }) {
            // A to-one pointed at a new object showed NULL.
            let old = cell.holdsKeyPlaceholder ? .null : cell.value(over: current[column])
            guard old != current[column] else { continue }
            outbox.postUpdate(table: row.table, key: row.key, column: column, old: old, new: current[column], origin: .local)
        }
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Shows what discarding pending changes undid, step by step: objects whose insert was
    /// discarded are detached, rows whose delete was discarded are announced again.
    func applyDiscarded(_ discarded: DiscardedChanges, reading: RowReads) {
        for step in discarded.steps {
            switch step {
            case .forgetInsert(let object, let row):
                // What the row shows without the insert: committed, with what is still queued
                // (a deleteAll before the insert hides it).
                // (A row not read now: what is queued for it alone.)
                let shown = row.flatMap { reading.uncommitted($0) ?? writeBehind.uncommittedValues(of: $0, over: nil) }
                forgetInsert(of: object, table: object._$tracking.table, shown: shown)
            case .restore(let row):
                let shown = discarded.shownWithoutObject[row]
                // An object a read made of a row only a discarded insert showed (not the
                // insert's own) goes with the insert, as that object would; its subscribers hear
                // the row go from what it showed, below.
                if shown != nil, writeBehind.decidesExistence(of: row) != true, let object = identityMap.object(table: row.table, key: row.key) {
                    relationships.tellWaitingParents(of: object)
                    detach(object, table: row.table)
                }
                // Unless the row is gone anyway (or an object shows it already). A row a
                // discarded insert showed without an object is the database's row now (the
                // insert's key was another insert's meanwhile, say).
                guard identityMap.object(table: row.table, key: row.key) == nil, let values = reading.current(row) else { continue }
                announceRowRestored(row, values: values, shown: shown)
            }
        }
    }

    /// Shows again what the object of an insert whose key the database has yet to assign holds
    /// once a change made to it while the insert was in flight is discarded.
    func reshowInsert(_ request: UInt64) {
        guard let (object, table) = identityMap.unkeyed[request], let stored = writeBehind.storedValues(ofInsert: request, table: table) else { return }
        let before = object._$values()
        defer {
            // The parents it pointed at and points at now hear it (their to-manys list it).
            if relationships.hasParents(table: table) {
                let after = object._$values()
                relationships.childChanged(table: table, old: { before[$0] }, new: { after[$0] })
            }
        }
        for (column, (now, then)) in zip(before, stored).enumerated() where column != primaryKeyColumns[table] {
            if schemas[table].relationshipColumns.contains(column), then == .null || KeyPlaceholder.request(in: then) != nil {
                // A link to a new object shows NULL until that object has its key; the object
                // points at it, or at nothing.
                let target = KeyPlaceholder.request(in: then).flatMap { identityMap.unkeyed[$0]?.object }
                if now != .null { try? object._$assign(.null, toColumn: column) }
                if object._$relatedObject(column: column) !== target { object._$setRelatedObject(target, column: column) }
            } else if now != then {
                try? object._$assign(then, toColumn: column)
            }
        }
        unkeyedRowChanged(table: table, request: request)
    }

    /// Sets a database value on an object and posts the change; a value that does not decode
    /// into the property's type leaves the object as it is, and so does the same number stored
    /// as the other kind (a column of NUMERIC affinity keeps the real 0.0 as the integer 0).
    private func assign(_ value: SQLValue, to object: any TrackedModel, cell: CellReference, origin: ChangeOrigin) {
        let old = object._$value(ofColumn: cell.column)
        guard old != value, !old.isSameNumber(as: value), (try? object._$assign(value, toColumn: cell.column)) != nil else { return }
        outbox.postUpdate(table: cell.row.table, key: cell.row.key, column: cell.column, old: old, new: value, origin: origin)
    }
}
