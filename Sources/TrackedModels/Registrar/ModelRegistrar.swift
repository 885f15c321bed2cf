/// The hub every tracked read and write goes through.
///
/// It keeps the identity map (one object per row), queues changed cells for the write-behind
/// writer, hands each change to the feed index, and records reads for dependency capture. It
/// belongs to the store's isolation domain, like the objects that report to it.
final class ModelRegistrar {
    struct Table {
        let schema: TableSchema
        let type: any TrackedModel.Type
        /// The identity map: the object of each row this store has handed out.
        var objects: [SQLValue: any TrackedModel] = [:]
    }

    private(set) var tables: [Table]
    private let tableIndexByType: [ObjectIdentifier: Int]
    let feeds: FeedIndex
    /// Changes made and not yet handed to the writer.
    var pending = PendingChanges()
    /// While set, writes are values read from the database: they are reported with this origin
    /// and not queued for writing.
    private(set) var applyingOrigin: ChangeOrigin?
    /// Set for the duration of one increment, so the write queues a delta instead of a value.
    private var incrementInProgress: Int64?
    /// The cells read by each active dependency capture, innermost last.
    private var captures: [Set<CellReference>] = []
    /// Open transactions, outermost first, and what changed in them.
    var transactionLevels: [TransactionLevel] = []
    var transactionLog: [LoggedChange] = []
    /// Called after a queued change when a flush may be due: while no flush is scheduled, or
    /// once the pending changes reach ``flushThreshold``. Not called on every write, which
    /// keeps the store out of the hot path.
    var didQueueChange: () -> Void = {}
    /// Whether a flush is scheduled (set by the store).
    var isFlushScheduled = false
    var flushThreshold = Int.max

    init(models: [any TrackedModel.Type]) {
        tables = models.map { Table(schema: $0._$schema, type: $0) }
        tableIndexByType = Dictionary(
            models.enumerated().map { (ObjectIdentifier($0.element), $0.offset) },
            uniquingKeysWith: { first, _ in first }
        )
        feeds = FeedIndex(schemas: tables.map(\.schema))
    }

    var schemas: [TableSchema] { feeds.schemas }

    func tableIndex(of type: any TrackedModel.Type) throws -> Int {
        guard let index = tableIndexByType[ObjectIdentifier(type)] else { throw StoreError.modelNotRegistered(type) }
        return index
    }

    // MARK: - Identity map

    func object(table: Int, key: SQLValue) -> (any TrackedModel)? {
        tables[table].objects[key]
    }

    /// Makes the registrar the object's store: its writes are tracked from now on.
    func attach(_ object: any TrackedModel, table: Int, key: SQLValue) {
        object._$tracking.registrar = self
        object._$tracking.tableIndex = table
        object._$tracking.rowKey = key
        tables[table].objects[key] = object
    }

    /// Attaches a newly inserted object and tells the membership feeds.
    func didInsert(_ object: any TrackedModel, table: Int, origin: ChangeOrigin) {
        let key = object._$primaryKey
        attach(object, table: table, key: key)
        let values = object._$values()
        let changes = tables[table].schema.columns.enumerated().map { index, column in
            ColumnChange(column: column.name, index: index, old: .null, new: values[index])
        }
        feeds.deliver(ChangeEvent(table: tables[table].schema.name, key: key, kind: .insert, changes: changes, origin: origin), table: table)
    }

    /// Detaches a deleted object, queues the delete when it is the program's, and tells the
    /// row's and the membership's subscribers.
    func didDelete(_ object: any TrackedModel, table: Int, origin: ChangeOrigin) {
        let key = object._$tracking.rowKey
        detach(table: table, key: key)
        if origin == .local {
            pending.delete(RowReference(table: table, key: key))
        }
        let values = object._$values()
        if isInTransaction {
            transactionLog.append(.delete(table: table, key: key, object: object, values: values, origin: origin))
        } else {
            feeds.deliver(deletion(table: table, key: key, values: values, origin: origin), table: table)
        }
        if origin == .local { queued() }
    }

    /// Detaches every object of a table, queues deleting all its rows, and tells the table's
    /// subscribers to re-read (a reset).
    func didDeleteAll(table: Int) {
        for object in tables[table].objects.values { object._$tracking.registrar = nil }
        tables[table].objects.removeAll()
        pending.deleteAll(table: table)
        feeds.deliverReset(table: table, origin: .local)
        queued()
    }

    func deletion(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin) -> ChangeEvent {
        let changes = tables[table].schema.columns.enumerated().map { index, column in
            ColumnChange(column: column.name, index: index, old: values[index], new: .null)
        }
        return ChangeEvent(table: tables[table].schema.name, key: key, kind: .delete, changes: changes, origin: origin)
    }

    func detach(table: Int, key: SQLValue) {
        tables[table].objects.removeValue(forKey: key)?._$tracking.registrar = nil
    }

    func detachAll() {
        for index in tables.indices {
            for object in tables[index].objects.values { object._$tracking.registrar = nil }
            tables[index].objects.removeAll()
        }
    }

    // MARK: - Reports from tracked properties

    func didAccess(tableIndex: Int, rowKey: SQLValue, column: Int) {
        guard !captures.isEmpty else { return }
        captures[captures.count - 1].insert(CellReference(row: RowReference(table: tableIndex, key: rowKey), column: column))
    }

    func didSet(tableIndex: Int, rowKey: SQLValue, column: Int, from oldValue: SQLValue, to newValue: SQLValue) {
        precondition(
            column != tables[tableIndex].schema.primaryKeyIndex || applyingOrigin != nil,
            "the primary key of a stored \(tables[tableIndex].type) cannot change; delete the object and insert a new one"
        )
        if applyingOrigin == nil {
            let cell = CellReference(row: RowReference(table: tableIndex, key: rowKey), column: column)
            pending.write(incrementInProgress.map(CellWrite.add) ?? .set(newValue), to: cell)
        }
        let origin = applyingOrigin ?? .local
        if isInTransaction {
            transactionLog.append(.update(table: tableIndex, key: rowKey, column: column, old: oldValue, new: newValue, origin: origin))
        } else {
            feeds.deliverUpdate(table: tableIndex, key: rowKey, column: column, old: oldValue, new: newValue, origin: origin)
        }
        if applyingOrigin == nil { queued() }
    }

    /// Tells the store about a queued change when a flush may be due.
    func queued() {
        if !isFlushScheduled || pending.count >= flushThreshold { didQueueChange() }
    }

    // MARK: - Scoped modes

    /// Runs `body`, in which each write adds `delta` instead of storing a value.
    func withIncrement<Result>(by delta: Int64, _ body: () throws -> Result) rethrows -> Result {
        incrementInProgress = delta
        defer { incrementInProgress = nil }
        return try body()
    }

    /// Runs `body`, in which writes apply values from the database instead of queueing them.
    func applying<Result>(_ origin: ChangeOrigin, _ body: () throws -> Result) rethrows -> Result {
        let outer = applyingOrigin
        applyingOrigin = origin
        defer { applyingOrigin = outer }
        return try body()
    }

    /// Runs `body` and returns the cells it read through tracked properties.
    func capturingAccess<Result>(_ body: () throws -> Result) rethrows -> (Result, Set<CellReference>) {
        captures.append([])
        defer { captures.removeLast() }
        let result = try body()
        return (result, captures[captures.count - 1])
    }
}
