extension ModelStore {
    /// Inserts an object: it is this store's from now on, and its row is written behind like
    /// any other change.
    ///
    /// With a key the model supplies, the object is in the identity map at once (``find(_:key:)``
    /// returns it) and the membership feed hears the insert now. An optional integer primary key
    /// left `nil` is assigned by SQLite when the insert commits: the object then gets its key,
    /// joins the identity map, and the membership feed hears it; await ``committedKey(of:)``
    /// for it. Inside ``transaction(_:)``, the insert commits with the transaction's other
    /// changes or not at all.
    ///
    /// ```swift
    /// let row = Row(id: 1_000, title: "Row 1000", count: 0)
    /// try store.insert(row)
    /// try await store.flush()   // committed
    /// ```
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/duplicateKey``) when this store already has
    ///   an object with the key, or the object is stored already (here or in another store). A
    ///   row the database refuses (a duplicate key in the file, a CHECK) is reported by
    ///   ``flush()`` and stays pending until fixed or discarded.
    public func insert<Model: TrackedModel>(_ object: Model) throws {
        try checkOpen("insert")
        let table = try registrar.tableIndex(of: Model.self)
        if let refusal = storedObjectRefusal(object, by: "insert") { throw refusal }
        try registrar.userDidInsert(object, table: table)
    }

    /// Why an object cannot be inserted, if it is stored already (here or in another store):
    /// only new objects are.
    private func storedObjectRefusal<Model: TrackedModel>(_ object: Model, by operation: String) -> StoreError? {
        guard object._$tracking.isAttached else { return nil }
        let whose = object._$tracking.registrar === registrar ? "already stored" : "another store's"
        return StoreError(
            code: .duplicateKey,
            message: "this \(Model.self) (key \(object._$tracking.key)) is \(whose); \(operation) new objects only (nothing was inserted)"
        )
    }

    /// Inserts objects as one unit: they commit together or not at all.
    ///
    /// ```swift
    /// try store.insert(contentsOf: (0..<1_000).map { Row(id: $0, title: "Row \($0)", count: 0) })
    /// ```
    public func insert<Model: TrackedModel>(contentsOf objects: some Sequence<Model>) throws {
        try transaction {
            for object in objects { try insert(object) }
        }
    }

    /// Inserts many rows in one transaction, streamed: the way to load thousands or millions
    /// of rows. Returns once they are committed.
    ///
    /// The objects are read for their values as the sequence yields them and sent to the
    /// database in chunks, inside one transaction, so memory holds a few thousand rows however
    /// many the sequence yields. Every change pending before the call commits first, in the same
    /// transaction: `deleteAll` followed by a bulk insert replaces a table as one unit.
    ///
    /// Unlike ``insert(contentsOf:)``, the objects do not become this store's: they stay
    /// detached (changing them stores nothing), and the identity map and subscribers of rows
    /// never see them one by one. Fetch the rows to work with them. The table's subscribers
    /// hear one ``ChangeEvent/Kind/reset`` once the rows are committed, and live results
    /// re-read. A `nil` key the database assigns is assigned; the objects are not told it.
    ///
    /// ```swift
    /// try store.deleteAll(Row.self)
    /// do {
    ///     try await store.bulkInsert(contentsOf: (0..<1_000_000).lazy.map {
    ///         Row(id: $0, title: "Row \($0)", count: 0)
    ///     })   // the old rows are gone, and the new ones are in
    /// } catch {
    ///     store.discardPendingChanges()   // or neither: the deleteAll is given up too
    ///     throw error
    /// }
    /// ```
    ///
    /// The synchronous ``insert(contentsOf:)`` keeps its name for objects the program goes on
    /// using; an asynchronous overload of it would change the meaning of every call of it made
    /// from asynchronous code.
    ///
    /// - Throws: Why nothing committed (a row the database refuses, such as a duplicate key, is
    ///   named): no row of the sequence is stored, and every change that was pending stays
    ///   pending, in order, until the next ``flush()`` or change (discard them to give up a
    ///   replacement). `CancellationError` when the task is cancelled while rows are still
    ///   being sent: the transaction rolls back. ``StoreError/Code/duplicateKey`` for an object
    ///   the store has already, ``StoreError/Code/notAttached`` for one that points at an object
    ///   it has not stored with a key: nothing of the sequence is stored then either.
    public func bulkInsert<Model: TrackedModel>(contentsOf objects: some Sequence<Model>) async throws {
        try checkOpen("bulkInsert")
        let table = try registrar.tableIndex(of: Model.self)
        let rows = BulkRows(table: table)
        let relationships = Model._$schema.relationshipColumns
        try await writeBehind.commit(streaming: rows) {
            var chunk: [[SQLValue]] = []
            for object in objects {
                if let refusal = bulkInsertRefusal(of: object, relationships: relationships) {
                    rows.refuse(refusal)
                    return
                }
                chunk.append(object._$values())
                guard chunk.count == Self.bulkChunk else { continue }
                guard !Task.isCancelled else { break }
                guard await rows.send(chunk) else { return }  // the transaction failed: nothing more to send
                chunk = []
            }
            if !Task.isCancelled, !chunk.isEmpty { guard await rows.send(chunk) else { return } }
            // Cancelled while the last rows waited for room: still in time to roll back.
            if Task.isCancelled { rows.cancel() } else { rows.finish() }
        }
    }

    /// Why an object cannot be bulk-inserted, if it cannot: it is stored already, or it points
    /// at an object this store has not stored with a key.
    private func bulkInsertRefusal<Model: TrackedModel>(of object: Model, relationships: [Int]) -> StoreError? {
        if let refusal = storedObjectRefusal(object, by: "bulk-insert") { return refusal }
        for column in relationships {
            guard let target = object._$relatedObject(column: column),
                  target._$tracking.registrar !== registrar || target._$tracking.key == .null
            else { continue }
            return StoreError(
                code: .notAttached,
                message: "\(Model.self).\(Model._$schema.columns[column].property) points at a \(type(of: target)) this store has not stored with a key; insert it and await committedKey(of:) before bulk-inserting what points at it (nothing was inserted)"
            )
        }
        return nil
    }

    /// Rows per chunk of a bulk insert: large enough that handing one over costs nothing per
    /// row, small enough that a cancellation is acted on at once.
    private static var bulkChunk: Int { 2_048 }

    /// Waits until an inserted object's row is committed and returns its primary key, which
    /// SQLite assigns for an optional integer key left `nil`.
    ///
    /// ```swift
    /// let sample = Sample(id: nil, ...)
    /// try store.insert(sample)
    /// let id = try await store.committedKey(of: sample)   // also sample.id
    /// ```
    ///
    /// - Throws: What ``flush()`` throws, such as the database refusing the row; or
    ///   ``StoreError/Code/notAttached`` for an object this store does not manage.
    public func committedKey<Model: TrackedModel>(of object: Model) async throws -> Model.PrimaryKeyValue {
        try checkOpen("committedKey(of:)")
        guard object._$tracking.registrar === registrar else { throw StoreError.notAttached(Model.self, operation: "wait for the key of") }
        try await flush()
        return try Model.PrimaryKeyValue(sqlValue: object._$primaryKey)
    }

    /// Deletes an object's row (written behind) and detaches the object.
    ///
    /// The object keeps its values; later writes to it are not stored. A pending update of the
    /// row commits before the delete, and nothing written afterwards brings the row back.
    ///
    /// The delete rules of the model's to-many relationships apply in the same unit, and so do
    /// the `ON DELETE` actions the database declares for to-one columns that point at the row
    /// and that no relationship names (`CASCADE`, `SET NULL`; `RESTRICT` and `NO ACTION` refuse
    /// with ``StoreError/Code/deleteDenied`` while rows point at it), so that objects, feeds
    /// and the file agree.
    ///
    /// ```swift
    /// try store.delete(row)
    /// ```
    public func delete<Model: TrackedModel>(_ object: Model) throws {
        try checkOpen("delete")
        let table = try registrar.tableIndex(of: Model.self)
        guard object._$tracking.registrar === registrar, object._$tracking.insertRequest == nil else {
            throw StoreError.notAttached(Model.self, operation: "delete")
        }
        guard hasDeleteRules(table: table) else { return registrar.userDidDelete(object, table: table) }
        // The delete rules' changes and the delete are one unit: all of them, or (a rule that
        // denies) none.
        try transaction {
            var deleting: Set<ObjectIdentifier> = []
            try deleteApplyingRules(object, table: table, deleting: &deleting)
        }
    }

    /// Deletes every row of a model's table (written behind) and detaches its objects.
    ///
    /// The delete rules of the model's to-many relationships apply to every row, in the same
    /// unit (so a ``DeleteRule/deny`` with children left throws, and nothing changes), and so
    /// do the `ON DELETE` actions the database declares for to-one columns that point at it.
    /// Subscribers of the table hear a ``ChangeEvent/Kind/reset`` rather than one deletion per
    /// row. Inside ``transaction(_:)`` it commits with the transaction's other changes, so
    /// "delete the old rows, insert the new ones" is all or nothing.
    ///
    /// ```swift
    /// try store.transaction {
    ///     try store.deleteAll(Row.self)
    ///     try store.insert(contentsOf: freshRows)
    /// }
    /// ```
    public func deleteAll<Model: TrackedModel>(_ type: Model.Type) throws {
        try checkOpen("deleteAll")
        let table = try registrar.tableIndex(of: type)
        guard hasDeleteRules(table: table) else { return registrar.userDidDeleteAll(table: table) }
        guard registrar.identityMap.unkeyedObjects(table: table).isEmpty else {
            throw StoreError(
                code: .notAttached,
                message: "cannot delete every \(Model.self): one waits for the key the database assigns, and its delete rules need it; flush first (nothing changed)"
            )
        }
        // Delete rules apply to every row as this store sees it, in one unit with the delete
        // of the whole table.
        try transaction {
            var deleting: Set<ObjectIdentifier> = []
            for object in try fetch(FetchDescriptor<Model>()) where object._$tracking.isAttached {
                try deleteApplyingRules(object, table: table, deleting: &deleting)
            }
            registrar.userDidDeleteAll(table: table)
        }
    }

    /// Adds to an integer property so that concurrent writers never lose an increment.
    ///
    /// The object changes at once (subscribers hear it); the store writes
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
        let column = Model.columnIndex(of: keyPath)
        let old = object[keyPath: keyPath]
        let (sum, overflow) = old.addingReportingOverflow(delta)
        guard !overflow, let delta64 = Int64(exactly: delta) else {
            throw StoreError(
                code: .overflow,
                message: "incrementing \(Model._$schema.name) \(object._$primaryKey) by \(delta) overflows \(Value.self); nothing changed"
            )
        }
        guard delta != 0 else { return }
        try registrar.userDidIncrement(object, column: column, by: delta64, from: old.sqlValue, to: sum.sqlValue)
    }

    /// Runs `body` as one unit: everything it writes (assignments, increments, inserts,
    /// deletes, `deleteAll`) commits in one database transaction or not at all, and feeds hear
    /// one event per subscriber and row when it ends, with each column's first old and last new
    /// value. If `body` throws, its changes are undone and nobody hears of them.
    ///
    /// Transactions nest: an inner one that throws undoes only its own changes.
    ///
    /// ```swift
    /// try store.transaction {
    ///     for _ in 0..<100 { try store.increment(\Row.count, of: row) }
    /// }   // row 42's subscribers hear one event: count 0 → 100
    /// ```
    public func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try checkOpen("transaction")
        registrar.beginTransaction()
        do {
            let result = try body()
            registrar.endTransaction(succeeded: true)
            return result
        } catch {
            registrar.endTransaction(succeeded: false)
            throw error
        }
    }
}
