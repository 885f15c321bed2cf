extension ModelStore {
    /// Inserts an object and returns once its row is committed, with its primary key assigned.
    ///
    /// An optional integer primary key that is `nil` is assigned by SQLite. The insert commits
    /// together with every change made before it.
    ///
    /// ```swift
    /// let row = Row(id: 1_000, title: "Row 1000", count: 0)
    /// try await store.insert(row)
    /// ```
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/insertFailed``, with the ``SQLiteError`` as
    ///   `underlying`) when the row cannot be inserted; the object stays unsaved and other
    ///   pending changes stay pending.
    public func insert<Model: TrackedModel>(_ object: Model) async throws {
        try await insert(contentsOf: [object])
    }

    /// Inserts objects in one transaction and returns once it is committed.
    ///
    /// ```swift
    /// try await store.insert(contentsOf: (0..<1_000).map { Row(id: $0, title: "Row \($0)", count: 0) })
    /// ```
    public func insert<Model: TrackedModel>(contentsOf objects: [Model]) async throws {
        try checkOpen("insert")
        let table = try registrar.tableIndex(of: Model.self)
        let schema = Model._$schema
        var requests: [(object: Model, request: UInt64, values: [SQLValue])] = []
        for object in objects {
            precondition(!object._$tracking.isAttached, "\(Model.self) \(object._$primaryKey) is already stored; insert new objects only")
            let values = object._$values()
            let assignsKey = schema.assignsPrimaryKey && values[schema.primaryKeyIndex] == .null
            let request = flushState.nextInsertRequest()
            let row = assignsKey ? nil : RowReference(table: table, key: values[schema.primaryKeyIndex])
            registrar.pending.insert(InsertRequest(table: table, values: values, row: row, id: request))
            requests.append((object, request, values))
        }
        do {
            try await flush()
        } catch {
            registrar.pending.withdrawInserts(Set(requests.map(\.request)))
            for request in requests { flushState.assignedKeys.removeValue(forKey: request.request) }
            throw StoreError(
                code: .insertFailed,
                message: "could not insert \(objects.count == 1 ? "a" : "\(objects.count)") \(Model.self) into \(schema.name); nothing was inserted",
                underlying: error as? SQLiteError
            )
        }
        for (object, request, inserted) in requests {
            if let key = flushState.assignedKeys.removeValue(forKey: request) {
                try registrar.applying(.local) { try object._$apply(key, toColumn: schema.primaryKeyIndex) }
            }
            let key = object._$primaryKey
            registrar.didInsert(object, table: table, origin: .local)
            // Writes made while the insert was in flight were not tracked yet: queue them now.
            for (column, (old, new)) in zip(inserted, object._$values()).enumerated()
            where old != new && column != schema.primaryKeyIndex {
                registrar.didSet(tableIndex: table, rowKey: key, column: column, from: old, to: new)
            }
        }
    }

    /// Deletes an object's row (written behind) and detaches the object.
    ///
    /// The object keeps its values; later writes to it are not stored. A pending update of the
    /// row commits before the delete, and nothing written afterwards brings the row back.
    ///
    /// ```swift
    /// try store.delete(row)
    /// ```
    public func delete<Model: TrackedModel>(_ object: Model) throws {
        try checkOpen("delete")
        let table = try registrar.tableIndex(of: Model.self)
        guard object._$tracking.registrar === registrar else { throw StoreError.notAttached(Model.self, operation: "delete") }
        registrar.didDelete(object, table: table, origin: .local)
    }

    /// Deletes every row of a model's table (written behind) and detaches its objects.
    ///
    /// Subscribers of the table hear a ``ChangeEvent/Kind/reset`` rather than one deletion per
    /// row.
    ///
    /// ```swift
    /// try store.deleteAll(Row.self)
    /// ```
    public func deleteAll<Model: TrackedModel>(_ type: Model.Type) throws {
        try checkOpen("delete")
        precondition(!registrar.isInTransaction, "deleteAll cannot run inside store.transaction { }; call it before or after")
        registrar.didDeleteAll(table: try registrar.tableIndex(of: type))
    }

    /// Adds to an integer property so that concurrent writers never lose an increment.
    ///
    /// The object changes at once (subscribers hear it); the writer stores
    /// `column = column + delta`, and after the commit the object holds the committed value,
    /// which includes increments other processes made meanwhile. A plain `row.count += 1` is
    /// last-writer-wins instead.
    ///
    /// ```swift
    /// try store.increment(\Row.count, of: row, by: 1)
    /// ```
    ///
    /// - Throws: ``StoreError`` when the object is not this store's, or when the sum overflows
    ///   the property's type (nothing changes then).
    public func increment<Model: TrackedModel, Value: FixedWidthInteger & ColumnValue>(
        _ keyPath: ReferenceWritableKeyPath<Model, Value>,
        of object: Model,
        by delta: Value = 1
    ) throws {
        try checkOpen("increment")
        guard object._$tracking.registrar === registrar else { throw StoreError.notAttached(Model.self, operation: "increment") }
        _ = Model.columnIndex(of: keyPath)
        let (sum, overflow) = object[keyPath: keyPath].addingReportingOverflow(delta)
        guard !overflow else {
            throw StoreError(
                code: .overflow,
                message: "incrementing \(Model._$schema.name) \(object._$primaryKey) by \(delta) overflows \(Value.self); nothing changed"
            )
        }
        registrar.withIncrement(by: Int64(delta)) { object[keyPath: keyPath] = sum }
    }
}

extension FlushState {
    mutating func nextInsertRequest() -> UInt64 {
        lastInsertRequest += 1
        return lastInsertRequest
    }
}
