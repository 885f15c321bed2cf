/// The hub every tracked read and write goes through.
///
/// It has explicit entry points and no modes: the program's changes come in through the
/// `userDid…` methods (an assignment only from the generated setter), and values from the
/// database through ``applyCommitted(_:)``, ``applyExternal(_:)`` and ``applyReloaded(table:rows:announcingReset:)``.
/// A program change is recorded for write-behind and posted to the outbox; a database value
/// reaches its object through the generated `_$assign`, which only notifies Observation, and
/// is never recorded as a write. Events are delivered once the bookkeeping is done, so a
/// handler's writes are ordinary writes.
///
/// It keeps the identity map (one object per row) and records reads for dependency capture. It
/// belongs to the store's isolation domain, like the objects that report to it.
final class ModelRegistrar {
    let schemas: [TableSchema]
    let types: [any TrackedModel.Type]
    private let tableIndexByType: [ObjectIdentifier: Int]
    private let primaryKeyColumns: [Int]
    private(set) var identityMap: IdentityMap
    let outbox: Outbox
    let writeBehind: WriteBehind
    /// Objects whose insert waits for the database to assign their key, by insert request.
    private(set) var unkeyedInserts: [UInt64: UnkeyedInsert] = [:]
    /// Rows without objects whose external changes are being delivered, as committed.
    private var deliveredRows: [RowReference: [SQLValue]] = [:]
    typealias UnkeyedInsert = (object: any TrackedModel, table: Int)
    /// The cells read by each active dependency capture, innermost last.
    private var captures: [Set<FeedIndex.Key>] = []
    /// Open transaction levels, outermost first, and how to undo them.
    // Unchecked exclusivity: read on every write; only begin/endTransaction mutate it, and
    // neither calls out while mutating it.
    @exclusivity(unchecked) private var transactionLevels: [TransactionLevel] = []
    private var undoLog: [UndoStep] = []
    /// Loads a row's object through the store, for a to-one relationship read; set by the store.
    var loadObject: ((_ table: Int, _ key: SQLValue) -> (any TrackedModel)?)?
    /// Loads the objects of the rows of a table whose column holds a key, in key order, for a
    /// to-many relationship read; set by the store.
    var loadChildren: ((_ table: Int, _ column: Int, _ key: SQLValue) throws -> [any TrackedModel])?
    /// Which parents hear a change of a child row; nil when no model has a to-many relationship.
    private(set) var memberships: Memberships?
    /// Objects whose insert is inserting what they point at, with the insert request reserved
    /// for them when the database assigns their key (what points back at them holds its
    /// placeholder).
    private var insertingObjects: [ObjectIdentifier: UInt64?] = [:]

    func isBeingInserted(_ object: some TrackedModel) -> Bool {
        insertingObjects[ObjectIdentifier(object)] != nil
    }

    /// The insert request of an object whose key the database has yet to assign: its pending
    /// insert's, or the one reserved while its insert is under way.
    func insertRequest(of object: any TrackedModel) -> UInt64? {
        if let reserved = insertingObjects[ObjectIdentifier(object)] { return reserved }
        let tracking = object._$tracking
        return tracking.registrar === self ? tracking.insertRequest : nil
    }

    init(models: [any TrackedModel.Type], writeBehind: WriteBehind) {
        schemas = models.map { $0._$schema }
        types = models
        tableIndexByType = Dictionary(
            models.enumerated().map { (ObjectIdentifier($0.element), $0.offset) },
            uniquingKeysWith: { first, _ in first }
        )
        primaryKeyColumns = schemas.map(\.primaryKeyIndex)
        identityMap = IdentityMap(tableCount: models.count)
        outbox = Outbox(feeds: FeedIndex(schemas: schemas))
        self.writeBehind = writeBehind
        if schemas.contains(where: { !$0.relationships.isEmpty }) {
            let memberships = Memberships(
                schemas: schemas, tableOf: { [tableIndexByType] in tableIndexByType[$0] },
                notify: { [unowned self] table, key, relationship, origin in
                    identityMap.object(table: table, key: key)?._$childrenChanged(relationship: relationship)
                    let parent = RowReference(table: table, key: key)
                    guard feeds.hasSubscriptions(.children(parent, relationship: relationship)) else { return }
                    if let origin { outbox.postChildren(table: table, key: key, relationship: relationship, origin: origin) }
                    // A feed stays: what the children are now is what its next change is told from.
                    recordChildren(of: parent, relationship: relationship)
                },
                parentKeys: { [unowned self] table, relationship in
                    identityMap.objects(table: table).map(\.key) + feeds.childrenKeys(table: table, relationship: relationship)
                }
            )
            self.memberships = memberships
            outbox.memberships = memberships
        }
    }

    var feeds: FeedIndex { outbox.feeds }
    /// Whether inserts wait for the database to assign their keys.
    var hasUnkeyedInserts: Bool { !unkeyedInserts.isEmpty }

    /// The table of a model type given by identity (a relationship's target or child).
    func tableIndex(of type: ObjectIdentifier) throws -> Int {
        guard let index = tableIndexByType[type] else {
            throw StoreError(code: .modelNotRegistered, message: "a relationship's model is not one of this store's models; pass it in `models:` when opening the store")
        }
        return index
    }

    func tableIndex(of type: any TrackedModel.Type) throws -> Int {
        guard let index = tableIndexByType[ObjectIdentifier(type)] else { throw StoreError.modelNotRegistered(type) }
        return index
    }

    // MARK: - Identity map

    func object(table: Int, key: SQLValue) -> (any TrackedModel)? {
        identityMap.object(table: table, key: key)
    }

    /// The identity-mapped object of a row read from the database: the existing one, or a new
    /// one decoded and attached.
    func object<Model: TrackedModel>(_ type: Model.Type, table: Int, values: [SQLValue]) throws -> Model {
        let key = values[primaryKeyColumns[table]]
        if let existing = identityMap.object(table: table, key: key) as? Model { return existing }
        let object = try Model(_$row: ModelRow(schema: schemas[table], values: values))
        attach(object, table: table, key: key)
        if hasUnkeyedInserts { adoptPendingTargets(of: object, table: table) }
        return object
    }

    /// Points a loaded object's to-one relationships at the new objects its row's pending
    /// writes point them at (their keys are not known yet, so the row shows NULL).
    private func adoptPendingTargets(of object: any TrackedModel, table: Int) {
        for column in schemas[table].relationshipColumns where object._$tracking.foreignKeys[column] == .null {
            let cell = CellReference(row: RowReference(table: table, key: object._$tracking.key), column: column)
            guard let request = writeBehind.linkedInsert(of: cell), let target = unkeyedInserts[request]?.object
            else { continue }
            object._$setRelatedObject(target, column: column)
        }
    }

    private func attach(_ object: any TrackedModel, table: Int, key: SQLValue) {
        object._$tracking.attach(to: self, table: table, key: key)
        identityMap.insert(object, table: table, key: key)
    }

    private func detach(_ object: any TrackedModel, table: Int) {
        let tracking = object._$tracking
        if let request = tracking.insertRequest {
            unkeyedInserts.removeValue(forKey: request)
            forgetLinks(to: object, table: table)
        }
        if tracking.key != .null, identityMap.object(table: table, key: tracking.key) === object {
            identityMap.remove(table: table, key: tracking.key)
        }
        tracking.detach()
    }

    /// Lets the objects that point at a new object whose insert is taken back (discarded, or
    /// undone with a transaction) forget it: their rows link to nothing (the placeholder of its
    /// key is written NULL), and so must they, even if the object is inserted again later (as
    /// another insert, whose key they never pointed at).
    private func forgetLinks(to object: any TrackedModel, table: Int) {
        let target = ObjectIdentifier(types[table])
        for (childTable, schema) in schemas.enumerated() {
            let columns = schema.relationshipColumns.filter { schema.columns[$0].reference?.model == target }
            guard !columns.isEmpty else { continue }
            let children = identityMap.objects(table: childTable).map(\.object) + unkeyedInserts.values.filter { $0.table == childTable }.map(\.object)
            for child in children {
                for column in columns where child._$relatedObject(column: column) === object && child._$tracking.foreignKeys[column] == .null {
                    child._$setRelatedObject(nil, column: column)
                }
            }
        }
    }

    /// Detaches every object: their writes are no longer stored.
    func detachAll() {
        for table in schemas.indices {
            for (_, object) in identityMap.removeAll(table: table) { object._$tracking.detach() }
        }
        for (_, entry) in unkeyedInserts { entry.object._$tracking.detach() }
        unkeyedInserts.removeAll()
        memberships?.forgetAll()
    }

    /// Called by an object's tracking when the object goes away.
    func objectWentAway(table: Int, key: SQLValue) {
        identityMap.removeIfGone(table: table, key: key)
        let parent = RowReference(table: table, key: key)
        memberships?.forget(parentTable: table, key: key) { [feeds] relationship in
            feeds.hasSubscriptions(.children(parent, relationship: relationship))
        }
    }

    // MARK: - The program's changes

    func didAccess(table: Int, key: SQLValue, column: Int) {
        guard !captures.isEmpty else { return }
        captures[captures.count - 1].insert(.cell(CellReference(row: RowReference(table: table, key: key), column: column)))
    }

    /// The program read the children of a parent's to-many relationship.
    func didAccessChildren(table: Int, key: SQLValue, relationship: Int) {
        guard !captures.isEmpty else { return }
        captures[captures.count - 1].insert(.children(RowReference(table: table, key: key), relationship: relationship))
    }

    /// The program assigned a new value to a column: from the generated setter only.
    ///
    /// - Parameter stored: What the column is written with, where that is not `new`: the
    ///   placeholder of a key the database has yet to assign (``KeyPlaceholder``), which the
    ///   object and its subscribers see as `new`, NULL.
    func userDidSet(_ object: any TrackedModel, tracking: ModelTracking, column: Int, from old: SQLValue, to new: SQLValue, storing stored: SQLValue? = nil) {
        let table = tracking.table
        precondition(
            column != primaryKeyColumns[table],
            "the primary key of a stored \(types[table]) cannot change; delete the object and insert a new one"
        )
        let isKeyed = record(.set(stored ?? new), column: column, of: object, tracking: tracking)
        if !transactionLevels.isEmpty { recordUndo(object, column: column, old: old) }
        guard old != new else { return }
        // A row whose key the database has yet to assign is announced, with its values then,
        // once it has one; the parents it moves between hear it now.
        if isKeyed {
            outbox.postUpdate(table: table, key: tracking.key, column: column, old: old, new: new, origin: .local)
        } else if let memberships, memberships.hasParents(table: table) {
            memberships.childChanged(table: table, key: .null, column: column, old: { _ in old }, new: { _ in new })
        }
    }

    /// The program added `delta` to an integer column whose value was `old`.
    func userDidIncrement(_ object: some TrackedModel, column: Int, by delta: Int64, from old: SQLValue, to new: SQLValue) throws {
        let tracking = object._$tracking
        try object._$assign(new, toColumn: column)
        let isKeyed = record(.add(delta), column: column, of: object, tracking: tracking)
        if !transactionLevels.isEmpty { recordUndo(object, column: column, old: old) }
        if isKeyed { outbox.postUpdate(table: tracking.table, key: tracking.key, column: column, old: old, new: new, origin: .local) }
    }

    /// Records a write for write-behind; returns whether the row has its key (is not an insert
    /// waiting for the database to assign one).
    private func record(_ write: CellWrite, column: Int, of object: any TrackedModel, tracking: ModelTracking) -> Bool {
        guard let request = tracking.insertRequest else {
            writeBehind.record(
                write, to: CellReference(row: RowReference(table: tracking.table, key: tracking.key), column: column),
                of: object, hint: &tracking.pendingUnit
            )
            return true
        }
        // The database has not assigned the key yet: the write joins the pending insert, or,
        // once that is in flight, changes the row by its key's placeholder, which the commit
        // that learned the key has replaced by then (see ``KeyPlaceholder``).
        if !writeBehind.record(write, column: column, ofInsert: request, table: tracking.table) {
            let row = RowReference(table: tracking.table, key: KeyPlaceholder.value(forInsert: request))
            writeBehind.record(write, to: CellReference(row: row, column: column), of: object, hint: &tracking.pendingUnit)
        }
        return false
    }

    /// The program inserted an object. A supplied key puts it in the identity map at once; a key
    /// the database assigns does so when the insert commits.
    /// What the object's to-one relationships point at is inserted first, when this store does
    /// not manage it yet.
    func userDidInsert(_ object: some TrackedModel, table: Int) throws {
        try writeBehind.withoutSubmitting { try insert(object, table: table) }
    }

    private func insert(_ object: some TrackedModel, table: Int) throws {
        let suppliedKey = object._$primaryKey
        let assignsKey = schemas[table].assignsPrimaryKey && suppliedKey == .null
        if !assignsKey, identityMap.object(table: table, key: suppliedKey) != nil {
            throw StoreError.duplicateKey(types[table], key: suppliedKey)
        }
        let relationships = schemas[table].relationshipColumns
        // Everything that can refuse the insert is checked before anything is inserted.
        if !relationships.isEmpty { try checkTargets(of: object, table: table) }
        if !schemas[table].relationships.isEmpty { try checkPendingChildren(of: object, table: table) }
        // What points back at the object while its targets are inserted holds the placeholder
        // of its key, when the database assigns it.
        let reserved = assignsKey && !relationships.isEmpty ? writeBehind.reserveInsertRequest() : nil
        if !relationships.isEmpty {
            insertingObjects[ObjectIdentifier(object)] = .some(reserved)
            do {
                try insertTargets(of: object, table: table)
            } catch {
                insertingObjects[ObjectIdentifier(object)] = nil
                throw error
            }
            // A target's pending children may have held this very object: it is stored already.
            if object._$tracking.isAttached {
                insertingObjects[ObjectIdentifier(object)] = nil
                return
            }
        }
        let values = object._$values()
        var stored = values
        for column in relationships {
            object._$tracking.foreignKeys[column] = values[column]
            stored[column] = storedValue(pointingAt: object._$relatedObject(column: column), shown: values[column])
        }
        if !relationships.isEmpty { insertingObjects[ObjectIdentifier(object)] = nil }
        if assignsKey {
            let request = writeBehind.recordInsert(table: table, values: stored, key: nil, of: object, reserved: reserved)
            object._$tracking.attach(to: self, table: table, key: .null, insertRequest: request)
            unkeyedInserts[request] = (object, table)
            if let memberships, memberships.hasParents(table: table) {
                memberships.childChanged(table: table, key: .null, old: { _ in .null }, new: { values[$0] })
            }
        } else {
            attach(object, table: table, key: suppliedKey)
            _ = writeBehind.recordInsert(table: table, values: stored, key: suppliedKey, of: object)
            outbox.postInsert(table: table, key: suppliedKey, values: values, origin: .local)
        }
        if !transactionLevels.isEmpty { undoLog.append(.inserted(object, table: table)) }
        if !schemas[table].relationships.isEmpty { try insertPendingChildren(of: object, table: table) }
    }

    func userDidDelete(_ object: some TrackedModel, table: Int) {
        let key = object._$tracking.key
        let values = object._$values()
        tellWaitingParents(of: object)
        detach(object, table: table)
        writeBehind.recordDelete(RowReference(table: table, key: key), of: object)
        if !transactionLevels.isEmpty { undoLog.append(.deleted(object, table: table, key: key, values: values)) }
        outbox.postDelete(table: table, key: key, values: values, origin: .local)
    }

    /// Detaches every object of a table (those whose insert waits for a key too: it commits
    /// before the deletion), records deleting all its rows, and tells the table's subscribers
    /// to re-read (a reset).
    func userDidDeleteAll(table: Int) {
        tellWaitingParents(ofChildTable: table)
        let objects = identityMap.removeAll(table: table)
        for (_, object) in objects { object._$tracking.detach() }
        let waiting = unkeyedInserts.filter { $0.value.table == table }
        for (request, entry) in waiting {
            unkeyedInserts[request] = nil
            entry.object._$tracking.detach()
        }
        writeBehind.recordDeleteAll(table: table)
        if !transactionLevels.isEmpty {
            undoLog.append(.deletedAll(
                objects.map { ($0.key, $0.object, $0.object._$values()) },
                waiting: waiting.map { ($0.key, $0.value, $0.value.object._$values()) },
                table: table
            ))
        }
        outbox.postReset(table: table, origin: .local)
    }

    // MARK: - Values from the database

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
        let inserted = finished.links.isEmpty ? [:] : unkeyedInserts.mapValues(\.object)
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

    /// Gives an inserted object the key the database assigned: it joins the identity map and
    /// its subscribers hear the insert (changes made while the insert was in flight change the
    /// keyed row by now). Does nothing the second time.
    func assignKey(_ key: SQLValue, toInsert request: UInt64) {
        guard let (object, table) = unkeyedInserts.removeValue(forKey: request) else { return }
        try? object._$assign(key, toColumn: primaryKeyColumns[table])
        let row = RowReference(table: table, key: key)
        guard identityMap.object(table: table, key: key) == nil, !writeBehind.deletes(row, afterInsert: request) else {
            // The program wrote that key itself: another object has it (an insert of that key,
            // which the database refuses now that the row exists), or a delete made after this
            // insert waits to commit. That object or that delete keeps the row; this object only
            // learns its key.
            if let memberships, memberships.hasParents(table: table) {
                let values = object._$values()
                memberships.childChanged(table: table, key: .null, old: { values[$0] }, new: { _ in .null })
            }
            object._$tracking.detach()
            return
        }
        attach(object, table: table, key: key)
        outbox.postInsert(table: table, key: key, values: object._$values(), origin: .local)
    }

    /// The unkeyed insert, if any, that the database gave this row's key.
    func unkeyedInsert(table: Int, request: UInt64) -> (any TrackedModel)? {
        unkeyedInserts[request].flatMap { $0.table == table ? $0.object : nil }
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
                if isDeletedHere { continue }
                // What subscribers hear is the row as this store shows it: with its changes still
                // pending (a refused one, say, made to the row before another process replaced it).
                let values = writeBehind.uncommittedValues(of: row, over: change.values)
                if let committed = change.values { deliveredRows[row] = committed }
                switch change.kind {
                case .insert: outbox.postInsert(table: change.table, key: change.key, values: values ?? [], origin: .external)
                case .delete: outbox.postDeleteOfUnknownRow(table: change.table, key: change.key, origin: .external)
                case .update:
                    for column in change.columns {
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
    func applyReloaded(table: Int, rows: [(key: SQLValue, values: [SQLValue]?)], announcingReset: Bool, origin: ChangeOrigin) {
        let mark = outbox.beginGroup()
        for (key, values) in rows {
            let row = RowReference(table: table, key: key)
            guard let object = identityMap.object(table: table, key: key) else {
                // No object shows it, but a parent may list it (a discarded change re-pointed it).
                if let memberships, memberships.hasParents(table: table) {
                    let current = writeBehind.uncommittedValues(of: row, over: values)
                    memberships.childChanged(table: table, key: key, old: { _ in SQLValue?.none }, new: { current?[$0] ?? .null }, origin: origin)
                }
                continue
            }
            // What the object shows is the committed row with every change still pending or in
            // flight applied, not what it showed before (a discarded change's values, say); a row
            // this store inserts, not yet committed, is its insert and what followed it.
            guard let current = writeBehind.uncommittedValues(of: row, over: values) else {
                // Gone, unless a delete of this store's takes it away (when that commits).
                if values == nil { rowWentAway(object, table: table, origin: origin) }
                continue
            }
            for column in current.indices where column != primaryKeyColumns[table] {
                assign(current[column], to: object, cell: CellReference(row: row, column: column), origin: origin)
            }
        }
        if announcingReset { outbox.postReset(table: table, origin: origin) }
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Detaches the object of a row the database no longer has, drops its changes not yet
    /// handed to the worker (there is no row left for them), and tells subscribers it is gone.
    private func rowWentAway(_ object: any TrackedModel, table: Int, origin: ChangeOrigin) {
        let key = object._$tracking.key
        let old = object._$values()
        tellWaitingParents(of: object)
        detach(object, table: table)
        writeBehind.dropChanges(of: RowReference(table: table, key: key))
        outbox.postDelete(table: table, key: key, values: old, origin: origin)
    }

    /// Puts an object back as it was before a discarded insert: detached, and gone for its
    /// subscribers.
    ///
    /// - Parameter committed: The row of the object's key as committed, if the file has one:
    ///   subscribers then hear the row go back to it rather than go away.
    private func forgetInsert(of object: any TrackedModel, table: Int, committed: [SQLValue]?) {
        let key = object._$tracking.key
        let values = object._$values()
        tellWaitingParents(of: object)
        detach(object, table: table)
        guard key != .null else {
            if let memberships, memberships.hasParents(table: table) {
                memberships.childChanged(table: table, key: .null, old: { values[$0] }, new: { _ in .null })
            }
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
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Tells subscribers that a row a discard brought back is there, read after the discard
    /// (on an engine whose reads are awaited); nothing when an object shows it by now.
    func announceRowBack(_ row: RowReference, values: [SQLValue]) {
        guard identityMap.object(table: row.table, key: row.key) == nil else { return }
        let mark = outbox.beginGroup()
        outbox.postInsert(table: row.table, key: row.key, values: values, origin: .local)
        outbox.endGroup(from: mark, keeping: true)
    }

    /// Tells the subscribers of a row that no object shows (live results among them) that
    /// the cells a discarded update had shown are back to what the row holds now: `current`,
    /// committed with what is still pending. (A row an object shows is reloaded into it.)
    func announceUndone(_ row: RowReference, shown: [Int: DiscardedChanges.ShownCell], current: [SQLValue]?) {
        guard identityMap.object(table: row.table, key: row.key) == nil, let current else { return }
        let mark = outbox.beginGroup()
        for (column, cell) in shown.sorted(by: { $0.key < $1.key }) {
            let old = cell.value(over: current[column])
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
                forgetInsert(of: object, table: object._$tracking.table, committed: row.flatMap(reading.committed))
            case .restore(let row):
                // Unless the row is gone anyway (or an object shows it already).
                guard identityMap.object(table: row.table, key: row.key) == nil, let values = reading.current(row) else { continue }
                outbox.postInsert(table: row.table, key: row.key, values: values, origin: .local)
            }
        }
    }

    /// Shows again what the object of an insert whose key the database has yet to assign holds
    /// once a change made to it while the insert was in flight is discarded.
    func reshowInsert(_ request: UInt64) {
        guard let (object, table) = unkeyedInserts[request], let values = writeBehind.uncommittedValues(ofInsert: request, table: table) else { return }
        for (column, (now, then)) in zip(object._$values(), values).enumerated() where column != primaryKeyColumns[table] && now != then {
            // A link to a new object stays: it shows NULL until that object has its key.
            if schemas[table].relationshipColumns.contains(column), then == .null, object._$relatedObject(column: column) != nil { continue }
            try? object._$assign(then, toColumn: column)
        }
    }

    /// Sets a database value on an object and posts the change; a value that does not decode
    /// into the property's type leaves the object as it is, and so does the same number stored
    /// as the other kind (a column of NUMERIC affinity keeps the real 0.0 as the integer 0).
    private func assign(_ value: SQLValue, to object: any TrackedModel, cell: CellReference, origin: ChangeOrigin) {
        let old = object._$values()[cell.column]
        guard old != value, !old.isSameNumber(as: value), (try? object._$assign(value, toColumn: cell.column)) != nil else { return }
        outbox.postUpdate(table: cell.row.table, key: cell.row.key, column: cell.column, old: old, new: value, origin: origin)
    }

    // MARK: - Dependency capture

    /// Runs `body` and returns what it read through tracked properties: cells, and to-many
    /// relationships.
    func capturingAccess<Result>(_ body: () throws -> Result) rethrows -> (Result, Set<FeedIndex.Key>) {
        captures.append([])
        defer { captures.removeLast() }
        let result = try body()
        return (result, captures[captures.count - 1])
    }

    // MARK: - Transactions

    /// One open level of `store.transaction { }`.
    private struct TransactionLevel {
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

    /// Whether a `store.transaction { }` is open.
    var isInTransaction: Bool { !transactionLevels.isEmpty }

    /// Runs `handler` when the innermost open transaction level fails (after its changes are
    /// undone), again if an enclosing level fails, and when the outermost ends (after its
    /// events are delivered); nothing when no transaction is open.
    func whenTransactionEnds(_ handler: @escaping () -> Void) {
        guard !transactionLevels.isEmpty else { return }
        transactionLevels[transactionLevels.count - 1].whenEnded.append(handler)
    }

    private struct SavedCell: Hashable {
        var object: ObjectIdentifier
        var column: Int
    }

    /// Remembers a cell's value before the innermost level first changed it.
    private func recordUndo(_ object: any TrackedModel, column: Int, old: SQLValue) {
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
    private enum UndoStep {
        case assigned(any TrackedModel, column: Int, old: SQLValue)
        /// A to-one relationship pointed elsewhere: the object it held, and its key.
        case related(any TrackedModel, column: Int, target: (any TrackedModel)?, key: SQLValue)
        case inserted(any TrackedModel, table: Int)
        /// An object deleted, with its values then: undoing also takes back what was assigned
        /// to it while it was detached.
        case deleted(any TrackedModel, table: Int, key: SQLValue, values: [SQLValue])
        case deletedAll(
            [(key: SQLValue, object: any TrackedModel, values: [SQLValue])],
            waiting: [(request: UInt64, entry: UnkeyedInsert, values: [SQLValue])],
            table: Int
        )
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

    /// Gives a re-attached object back the values it had when it was detached.
    private func restore(_ object: any TrackedModel, to values: [SQLValue]) {
        for (column, (now, then)) in zip(object._$values(), values).enumerated() where now != then {
            try? object._$assign(then, toColumn: column)
        }
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
        case .inserted(let object, let table):
            tellWaitingParents(of: object)
            detach(object, table: table)
        case .deleted(let object, let table, let key, let values):
            restore(object, to: values)
            attach(object, table: table, key: key)
            tellWaitingParents(of: object)
        case .deletedAll(let objects, let waiting, let table):
            for (key, object, values) in objects {
                restore(object, to: values)
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
