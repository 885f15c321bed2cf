/// The hub every tracked read and write goes through.
///
/// It keeps the identity map (one object per row), queues changed cells for the write-behind
/// writer, and tells the store when something is pending. It belongs to the store's isolation
/// domain, like the objects that report to it.
final class ModelRegistrar {
    struct Table {
        let schema: TableSchema
        let type: any TrackedModel.Type
        /// The identity map: the object of each row this store has handed out.
        var objects: [SQLValue: any TrackedModel] = [:]
    }

    private(set) var tables: [Table]
    private let tableIndexByType: [ObjectIdentifier: Int]
    /// Changes made and not yet handed to the writer.
    var pending = PendingChanges()
    /// While set, writes are values read from the database: they are reported with this origin
    /// and not queued for writing.
    private(set) var applyingOrigin: ChangeOrigin?
    /// Set for the duration of one increment, so the write queues a delta instead of a value.
    private var incrementInProgress: Int64?
    /// Called after each queued change.
    var didQueueChange: () -> Void = {}

    init(models: [any TrackedModel.Type]) {
        tables = models.map { Table(schema: $0._$schema, type: $0) }
        tableIndexByType = Dictionary(
            models.enumerated().map { (ObjectIdentifier($0.element), $0.offset) },
            uniquingKeysWith: { first, _ in first }
        )
    }

    var schemas: [TableSchema] { tables.map(\.schema) }

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

    func didAccess(tableIndex: Int, rowKey: SQLValue, column: Int) {}

    func didSet(tableIndex: Int, rowKey: SQLValue, column: Int, from oldValue: SQLValue, to newValue: SQLValue) {
        precondition(
            column != tables[tableIndex].schema.primaryKeyIndex || applyingOrigin != nil,
            "the primary key of a stored \(tables[tableIndex].type) cannot change; delete the object and insert a new one"
        )
        guard applyingOrigin == nil else { return }
        let cell = CellReference(row: RowReference(table: tableIndex, key: rowKey), column: column)
        if let delta = incrementInProgress {
            pending.write(.add(delta), to: cell)
        } else {
            pending.write(.set(newValue), to: cell)
        }
        didQueueChange()
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
}
