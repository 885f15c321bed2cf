extension ModelStore {
    /// Fetches the objects of a model, optionally filtered, ordered and limited.
    ///
    /// Rows this store already handed out come back as the same objects. Changes not yet
    /// flushed count, as in the typed ``fetch(_:)``: the SQL runs over the table as this store
    /// sees it (the committed rows, with the rows it inserted, changed or deleted since shown
    /// as its objects hold them), so an object inserted a moment ago is found, and a deleted
    /// one is not. The condition and ordering may name the model's columns.
    ///
    /// ```swift
    /// let busy = try store.fetch(Row.self, where: "count > ?", [10], orderBy: "count DESC", limit: 5)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The model type.
    ///   - condition: A SQL expression for `WHERE`, with `?` placeholders.
    ///   - arguments: The values bound to the placeholders.
    ///   - ordering: A SQL `ORDER BY` clause without the keywords, such as `"count DESC, id"`.
    ///   - limit: At most this many objects.
    public func fetch<Model: TrackedModel>(
        _ type: Model.Type,
        where condition: String? = nil,
        _ arguments: [any ColumnValue] = [],
        orderBy ordering: String? = nil,
        limit: Int? = nil
    ) throws -> [Model] {
        try checkOpen("fetch")
        let table = try registrar.tableIndex(of: type)
        let rows = try reads.now(reads.tableRows(table, sql: Self.selectSQL(Model.self, where: condition, orderBy: ordering, limit: limit), arguments: arguments.map(\.sqlValue), returnsModelRows: true))
        return try rows.map { try object(Model.self, table: table, values: $0) }
    }

    /// The statement of a raw-SQL fetch.
    static func selectSQL<Model: TrackedModel>(_ type: Model.Type, where condition: String?, orderBy ordering: String?, limit: Int?) -> String {
        var sql = Model._$schema.selectSQL
        if let condition { sql += " WHERE \(condition)" }
        if let ordering { sql += " ORDER BY \(ordering)" }
        if let limit { sql += " LIMIT \(limit)" }
        return sql
    }

    /// The statement of a raw-SQL count.
    static func countSQL<Model: TrackedModel>(_ type: Model.Type, where condition: String?) -> String {
        var sql = "SELECT count(*) FROM \(quoteIdentifier(Model._$schema.name))"
        if let condition { sql += " WHERE \(condition)" }
        return sql
    }

    /// The object with a primary key, or `nil` when there is no such row or this store deleted
    /// it (whether or not the delete has committed yet).
    ///
    /// ```swift
    /// if let row = try store.find(Row.self, key: 42) { row.count += 1 }
    /// ```
    public func find<Model: TrackedModel>(_ type: Model.Type, key: Model.PrimaryKeyValue) throws -> Model? {
        try checkOpen("find")
        let table = try registrar.tableIndex(of: type)
        if let object = registrar.identityMap.object(table: table, shownAs: key.sqlValue) as? Model { return object }
        return try reads.now(reads.current(RowReference(table: table, key: key.sqlValue))).map { try object(Model.self, table: table, values: $0) }
    }

    /// The number of rows of a model, optionally filtered; changes not yet flushed count, as in
    /// ``fetch(_:where:_:orderBy:limit:)``.
    ///
    /// ```swift
    /// let busy = try store.count(Row.self, where: "count > ?", [10])
    /// ```
    public func count<Model: TrackedModel>(_ type: Model.Type, where condition: String? = nil, _ arguments: [any ColumnValue] = []) throws -> Int {
        try checkOpen("count")
        let table = try registrar.tableIndex(of: type)
        let rows = try reads.now(reads.tableRows(table, sql: Self.countSQL(Model.self, where: condition), arguments: arguments.map(\.sqlValue)))
        guard case .integer(let count) = rows.first?.first else { return 0 }
        return Int(count)
    }

    /// The identity-mapped object of a row: the existing one, or a new one decoded and attached.
    ///
    /// A row whose key the database just assigned to this store's insert, committed before the
    /// store heard so, is the inserting object: it gets its key now rather than having a second
    /// object made for the same row. Not a row a queued change decides (an insert of that key
    /// whose object was deleted, and the delete discarded): that change shows it, and the
    /// inserting object, still shown by its key's placeholder, learns its key when the store
    /// applies the commit.
    func object<Model: TrackedModel>(_ type: Model.Type, table: Int, values: [SQLValue]) throws -> Model {
        if registrar.identityMap.hasUnkeyed {
            let row = RowReference(table: table, key: values[Model._$schema.primaryKeyIndex])
            if registrar.identityMap.object(table: table, shownAs: row.key) == nil,
               let request = worker.insertRequest(assignedKey: row),
               registrar.identityMap.unkeyedObject(table: table, request: request) != nil,
               !writeBehind.decidesRow(row, afterInsert: request) {
                registrar.assignKey(row.key, toInsert: request)
            }
        }
        return try registrar.object(Model.self, table: table, values: values)
    }
}
