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
    let primaryKeyColumns: [Int]
    let identityMap: IdentityMap
    let outbox: Outbox
    let writeBehind: WriteBehind
    /// Relationships' reads and who hears a child's change; the registrar tells it of changes.
    let relationships: Relationships
    /// Rows without objects whose external changes are being delivered, as committed.
    var deliveredRows: [RowReference: [SQLValue]] = [:]
    /// The cells read by each active dependency capture, innermost last.
    private var captures: [Set<FeedIndex.Key>] = []
    /// Open transaction levels, outermost first, and how to undo them.
    // Unchecked exclusivity: read on every write; it is mutated only through its own methods,
    // which call out to nothing while they run.
    @exclusivity(unchecked) var undoLog = UndoLog()
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

    /// - Parameter outbox: Where the registrar posts changes; the store delivers them.
    init(models: [any TrackedModel.Type], writeBehind: WriteBehind, outbox: Outbox) {
        schemas = models.map { $0._$schema }
        types = models
        tableIndexByType = Dictionary(
            models.enumerated().map { (ObjectIdentifier($0.element), $0.offset) },
            uniquingKeysWith: { first, _ in first }
        )
        primaryKeyColumns = schemas.map(\.primaryKeyIndex)
        identityMap = IdentityMap(tableCount: models.count)
        self.outbox = outbox
        self.writeBehind = writeBehind
        relationships = Relationships(
            schemas: schemas, identityMap: identityMap, writeBehind: writeBehind, outbox: outbox,
            tableOf: { [tableIndexByType] in tableIndexByType[$0] }
        )
    }

    /// The rows of a table's inserts whose key the database has yet to assign, in the order
    /// they were inserted: each by its key's placeholder (its temporary identity).
    func unkeyedRows(table: Int) -> [RowReference] {
        identityMap.unkeyedObjects(table: table).map { RowReference(table: table, key: KeyPlaceholder.value(forInsert: $0.request)) }
    }

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

    /// The identity-mapped object of a row read from the database: the existing one, or a new
    /// one decoded and attached.
    func object<Model: TrackedModel>(_ type: Model.Type, table: Int, values: [SQLValue]) throws -> Model {
        let key = values[primaryKeyColumns[table]]
        if let existing = identityMap.object(table: table, shownAs: key) as? Model { return existing }
        let object = try Model(_$row: ModelRow(schema: schemas[table], values: values))
        attach(object, table: table, key: key)
        if identityMap.hasUnkeyed { showPendingTargets(of: object, table: table) }
        return object
    }

    /// Points an object's to-one relationships that show NULL at the new objects its row's
    /// writes not yet committed point them at (their keys are not known yet), and at nothing
    /// where none does (a discarded write had pointed one at a new object).
    func showPendingTargets(of object: any TrackedModel, table: Int) {
        for column in schemas[table].relationshipColumns where object._$tracking.foreignKeys[column] == .null {
            let cell = CellReference(row: RowReference(table: table, key: object._$tracking.key), column: column)
            let target = writeBehind.linkedInsert(of: cell).flatMap { identityMap.unkeyed[$0]?.object }
            guard object._$relatedObject(column: column) !== target else { continue }
            object._$setRelatedObject(target, column: column)
        }
    }

    func attach(_ object: any TrackedModel, table: Int, key: SQLValue) {
        object._$tracking.attach(to: self, table: table, key: key)
        identityMap.insert(object, table: table, key: key)
    }

    func detach(_ object: any TrackedModel, table: Int) {
        let tracking = object._$tracking
        let request = tracking.insertRequest
        if let request {
            identityMap.removeUnkeyed(request: request)
            forgetLinks(to: object, table: table)
        }
        if tracking.key != .null, identityMap.object(table: table, key: tracking.key) === object {
            identityMap.remove(table: table, key: tracking.key)
        }
        tracking.detach()
        if let request { unkeyedRowChanged(table: table, request: request) }
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
            let children = identityMap.objects(table: childTable).map(\.object) + identityMap.unkeyedObjects(table: childTable).map(\.object)
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
        for object in identityMap.removeAllUnkeyed() { object._$tracking.detach() }
        relationships.forgetAll()
    }

    /// Called by an object's tracking when the object goes away.
    func objectWentAway(table: Int, key: SQLValue) {
        identityMap.removeIfGone(table: table, key: key)
        relationships.parentWentAway(table: table, key: key)
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
        if undoLog.isOpen { recordUndo(object, column: column, old: old) }
        guard old != new else {
            // A to-one pointed from nothing at a new object, or from one to another: the row
            // shows NULL still, but what it reaches changed.
            if schemas[table].relationshipColumns.contains(column) {
                if isKeyed { outbox.postReevaluation(table: table, key: tracking.key) } else { unkeyedRowChanged(table: table, request: tracking.insertRequest) }
            }
            return
        }
        // A row whose key the database has yet to assign is announced, with its values then,
        // once it has one; the parents it moves between hear it now.
        if isKeyed {
            outbox.postUpdate(table: table, key: tracking.key, column: column, old: old, new: new, origin: .local)
            // Pointed at a new object: the row shows NULL, so a transaction's net change can
            // show none (NULL, a key, NULL again), though what the row reaches changed.
            if stored != nil { outbox.postReevaluation(table: table, key: tracking.key) }
        } else {
            relationships.childChanged(table: table, column: column, old: { _ in old }, new: { _ in new })
            unkeyedRowChanged(table: table, request: tracking.insertRequest)
        }
    }

    /// Tells live results that the row of an insert whose key the database has yet to assign
    /// changed, came or went (subscribers hear of it once it has its key).
    func unkeyedRowChanged(table: Int, request: UInt64?) {
        guard let request else { return }
        outbox.postReevaluation(table: table, key: KeyPlaceholder.value(forInsert: request))
    }

    /// The program added `delta` to an integer column whose value was `old`.
    func userDidIncrement(_ object: some TrackedModel, column: Int, by delta: Int64, from old: SQLValue, to new: SQLValue) throws {
        let tracking = object._$tracking
        try object._$assign(new, toColumn: column)
        let isKeyed = record(.add(delta), column: column, of: object, tracking: tracking)
        if undoLog.isOpen { recordUndo(object, column: column, old: old) }
        if isKeyed {
            outbox.postUpdate(table: tracking.table, key: tracking.key, column: column, old: old, new: new, origin: .local)
        } else {
            unkeyedRowChanged(table: tracking.table, request: tracking.insertRequest)
        }
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
        let linkColumns = schemas[table].relationshipColumns
        // Everything that can refuse the insert is checked before anything is inserted.
        if !linkColumns.isEmpty { try checkTargets(of: object, table: table) }
        if !schemas[table].relationships.isEmpty { try checkPendingChildren(of: object, table: table) }
        // What points back at the object while its targets are inserted holds the placeholder
        // of its key, when the database assigns it.
        let reserved = assignsKey && !linkColumns.isEmpty ? writeBehind.reserveInsertRequest() : nil
        if !linkColumns.isEmpty {
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
        for column in linkColumns {
            object._$tracking.foreignKeys[column] = values[column]
            stored[column] = storedValue(pointingAt: object._$relatedObject(column: column), shown: values[column])
        }
        if !linkColumns.isEmpty { insertingObjects[ObjectIdentifier(object)] = nil }
        if assignsKey {
            let request = writeBehind.recordInsert(table: table, values: stored, key: nil, of: object, reserved: reserved)
            object._$tracking.attach(to: self, table: table, key: .null, insertRequest: request)
            identityMap.insertUnkeyed(object, table: table, request: request)
            relationships.childChanged(table: table, old: { _ in .null }, new: { values[$0] })
            unkeyedRowChanged(table: table, request: request)
        } else {
            attach(object, table: table, key: suppliedKey)
            _ = writeBehind.recordInsert(table: table, values: stored, key: suppliedKey, of: object)
            outbox.postInsert(table: table, key: suppliedKey, values: values, origin: .local)
        }
        if undoLog.isOpen { undoLog.record(.inserted(object, table: table, handedOverChildren: object._$tracking.handedOverChildren)) }
        if !schemas[table].relationships.isEmpty {
            try insertPendingChildren(of: object, table: table)
            object._$tracking.handedOverChildren = true
        }
    }

    func userDidDelete(_ object: some TrackedModel, table: Int) {
        let key = object._$tracking.key
        let values = object._$values()
        relationships.tellWaitingParents(of: object)
        detach(object, table: table)
        writeBehind.recordDelete(RowReference(table: table, key: key), of: object)
        if undoLog.isOpen {
            undoLog.record(.deleted(object, table: table, key: key, values: values, targets: relatedTargets(of: object, table: table)))
        }
        outbox.postDelete(table: table, key: key, values: values, origin: .local)
    }

    /// Detaches every object of a table (those whose insert waits for a key too: it commits
    /// before the deletion), records deleting all its rows, and tells the table's subscribers
    /// to re-read (a reset).
    func userDidDeleteAll(table: Int) {
        relationships.tellWaitingParents(ofChildTable: table)
        let objects = identityMap.removeAll(table: table)
        for (_, object) in objects { object._$tracking.detach() }
        let waiting = identityMap.removeAllUnkeyed(table: table)
        for (_, entry) in waiting { entry.object._$tracking.detach() }
        writeBehind.recordDeleteAll(table: table)
        if undoLog.isOpen {
            undoLog.record(.deletedAll(
                objects.map { ($0.key, $0.object, $0.object._$values(), relatedTargets(of: $0.object, table: table)) },
                waiting: waiting.map { ($0.request, $0.entry, $0.entry.object._$values(), relatedTargets(of: $0.entry.object, table: table)) },
                table: table
            ))
        }
        outbox.postReset(table: table, origin: .local)
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
}
