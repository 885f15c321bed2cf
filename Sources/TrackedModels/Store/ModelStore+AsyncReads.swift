extension ModelStore {
    /// The store's reads in `async` form, for both engines: on PostgreSQL a read is a round
    /// trip to the server, which these await with the store's actor free meanwhile; on SQLite
    /// they read the file as the synchronous forms do.
    ///
    /// ```swift
    /// let store = try await ModelStore.open(.postgres(url), models: [Row.self])
    /// let busy = try await store.async.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 10 }))
    /// let live = try await store.async.results(for: FetchDescriptor<Row>(sortBy: [SortDescriptor(\.count)]))
    /// ```
    ///
    /// The synchronous forms (``fetch(_:)``, ``find(_:key:)`` ...) are for a local file, and
    /// fail with ``StoreError/Code/asyncReadRequired`` on PostgreSQL. Live results, once made,
    /// are read synchronously on both: they are kept in memory.
    public var async: AsyncReads { AsyncReads(store: self) }

    /// See ``ModelStore/async``.
    public struct AsyncReads {
        let store: ModelStore

        /// The objects a descriptor matches, in its order and window; as ``ModelStore/fetch(_:)``.
        ///
        /// ```swift
        /// let rows = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        /// ```
        public func fetch<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) async throws -> [Model] {
            try store.checkOpen("fetch")
            let plan = try store.compile(descriptor)
            let objects = try store.objects(Model.self, of: plan, rows: await store.reads.awaited(store.reads.matching(plan, windowed: true)))
            try await store.prefetchAwaitingReads(descriptor.relationshipKeyPathsForPrefetching, of: objects)
            return objects
        }

        /// How many objects a descriptor matches; as ``ModelStore/fetchCount(_:)``.
        ///
        /// ```swift
        /// let n = try await store.async.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        /// ```
        public func fetchCount<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) async throws -> Int {
            try store.checkOpen("fetchCount")
            return try await store.reads.awaited(store.reads.count(store.compile(descriptor)))
        }

        /// The object with a primary key, or nil; as ``ModelStore/find(_:key:)``.
        ///
        /// ```swift
        /// if let row = try await store.async.find(Row.self, key: 42) { row.count += 1 }
        /// ```
        public func find<Model: TrackedModel>(_ type: Model.Type, key: Model.PrimaryKeyValue) async throws -> Model? {
            try store.checkOpen("find")
            let table = try store.registrar.tableIndex(of: type)
            let values = try await store.reads.awaited(store.reads.current(RowReference(table: table, key: key.sqlValue)))
            if let object = store.registrar.identityMap.object(table: table, shownAs: key.sqlValue) as? Model { return object }
            return try values.map { try store.object(Model.self, table: table, values: $0) }
        }

        /// The objects a raw-SQL condition selects; as ``ModelStore/fetch(_:where:_:orderBy:limit:)``,
        /// in the engine's own SQL (`$1` placeholders on PostgreSQL, `?` on SQLite).
        ///
        /// ```swift
        /// let busy = try await store.async.fetch(Row.self, where: "count > $1", [10], orderBy: "count DESC", limit: 5)
        /// ```
        public func fetch<Model: TrackedModel>(
            _ type: Model.Type,
            where condition: String? = nil,
            _ arguments: [any ColumnValue] = [],
            orderBy ordering: String? = nil,
            limit: Int? = nil
        ) async throws -> [Model] {
            try store.checkOpen("fetch")
            let table = try store.registrar.tableIndex(of: type)
            let sql = ModelStore.selectSQL(Model.self, where: condition, orderBy: ordering, limit: limit)
            let values = arguments.map(\.sqlValue)
            let rows = try await store.reads.awaited(store.reads.tableRows(table, sql: sql, arguments: values, returnsModelRows: true))
            return try rows.map { try store.object(Model.self, table: table, values: $0) }
        }

        /// The number of rows a raw-SQL condition selects; as ``ModelStore/count(_:where:_:)``.
        ///
        /// ```swift
        /// let busy = try await store.async.count(Row.self, where: "count > $1", [10])
        /// ```
        public func count<Model: TrackedModel>(_ type: Model.Type, where condition: String? = nil, _ arguments: [any ColumnValue] = []) async throws -> Int {
            try store.checkOpen("count")
            let table = try store.registrar.tableIndex(of: type)
            let sql = ModelStore.countSQL(Model.self, where: condition)
            let values = arguments.map(\.sqlValue)
            let rows = try await store.reads.awaited(store.reads.tableRows(table, sql: sql, arguments: values))
            guard case .integer(let count) = rows.first?.first else { return 0 }
            return Int(count)
        }

        /// Loads relationships of objects (the target of a to-one, the children of a to-many), so
        /// that reading them asks the database nothing; as a fetch's
        /// ``FetchDescriptor/relationshipKeyPathsForPrefetching`` does. On PostgreSQL a
        /// relationship is read synchronously only from what the store holds: load it first.
        ///
        /// ```swift
        /// let lists = try await store.async.fetch(FetchDescriptor<TodoList>())
        /// try await store.async.prefetch([\.rows], of: lists)
        /// print(lists.map(\.rows.count))
        /// ```
        public func prefetch<Model: TrackedModel>(_ keyPaths: [PartialKeyPath<Model>], of objects: [Model]) async throws {
            try store.checkOpen("prefetch")
            try await store.prefetchAwaitingReads(keyPaths, of: objects)
        }

        /// Deletes an object after applying its delete rules; as ``ModelStore/delete(_:)``,
        /// reading the children the rules apply to where they are not loaded (on PostgreSQL,
        /// the synchronous form throws ``StoreError/Code/asyncReadRequired`` then).
        ///
        /// ```swift
        /// try await store.async.delete(list)  // its rows' list becomes nil (nullify)
        /// ```
        public func delete<Model: TrackedModel>(_ object: Model) async throws {
            try store.checkOpen("delete")
            let table = try store.registrar.tableIndex(of: Model.self)
            // Where the delete is refused, or reads nothing, it is made at once.
            guard object._$tracking.registrar === store.registrar, object._$tracking.insertRequest == nil, store.hasDeleteRules(table: table) else {
                return try store.delete(object)
            }
            let key = object._$tracking.key
            try await store.reads.answering(gathering: { try await store.readsForDeleting(table: table, keys: [key]) }) { try store.delete(object) }
        }

        /// Deletes every row of a model's table; as ``ModelStore/deleteAll(_:)``, reading the
        /// rows and children its delete rules apply to.
        ///
        /// ```swift
        /// try await store.async.deleteAll(TodoList.self)
        /// ```
        public func deleteAll<Model: TrackedModel>(_ type: Model.Type) async throws {
            try store.checkOpen("deleteAll")
            let table = try store.registrar.tableIndex(of: type)
            // Where the delete is refused, or reads nothing, it is made at once.
            guard store.hasDeleteRules(table: table), store.registrar.identityMap.unkeyedObjects(table: table).isEmpty else {
                return try store.deleteAll(type)
            }
            let every = try store.reads.matching(store.compile(FetchDescriptor<Model>()), windowed: true)
            try await store.reads.answering(gathering: { try await store.readsForDeleting(table: table, keys: [], first: every) }) { try store.deleteAll(type) }
        }

        /// Live results of a descriptor; as ``ModelStore/results(for:)``.
        ///
        /// ```swift
        /// let busy = try await store.async.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        /// ```
        public func results<Model: TrackedModel>(for descriptor: FetchDescriptor<Model>) async throws -> FetchedResults<Model> {
            try store.checkOpen("results(for:)")
            let plan = try store.compile(descriptor)
            // Made in the run that composes the rows, with no await between: no change can fall
            // in a gap.
            return FetchedResults(store: store, plan: plan, matching: try await store.reads.awaited(store.reads.matching(plan, windowed: false)))
        }
    }
}
