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
            let width = plan.schema.columns.count
            let rows = try await store.reading(sideEffects: false) { try store.matchingRows(plan, windowed: true) }
            try store.checkOpen("fetch")
            let objects = try rows.map { try store.object(Model.self, table: plan.table, values: $0.count == width ? $0 : Array($0.prefix(width))) }
            try await store.reading(sideEffects: true) { try store.prefetch(descriptor.relationshipKeyPathsForPrefetching, of: objects) }
            return objects
        }

        /// How many objects a descriptor matches; as ``ModelStore/fetchCount(_:)``.
        ///
        /// ```swift
        /// let n = try await store.async.fetchCount(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        /// ```
        public func fetchCount<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>) async throws -> Int {
            try store.checkOpen("fetchCount")
            return try await store.reading(sideEffects: false) { try store.fetchCount(descriptor) }
        }

        /// The object with a primary key, or nil; as ``ModelStore/find(_:key:)``.
        ///
        /// ```swift
        /// if let row = try await store.async.find(Row.self, key: 42) { row.count += 1 }
        /// ```
        public func find<Model: TrackedModel>(_ type: Model.Type, key: Model.PrimaryKeyValue) async throws -> Model? {
            try store.checkOpen("find")
            let table = try store.registrar.tableIndex(of: type)
            let values = try await store.reading(sideEffects: false) { try store.currentValues(table: table, key: key.sqlValue) }
            try store.checkOpen("find")
            if let object = store.registrar.object(table: table, key: key.sqlValue) as? Model { return object }
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
            let rows = try await store.reading(sideEffects: false) { try store.readRows(sql, values, table: table) }
            try store.checkOpen("fetch")
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
            let rows = try await store.reading(sideEffects: false) { try store.readRows(sql, values, table: table) }
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
            try await store.reading(sideEffects: true) { try store.prefetch(keyPaths, of: objects) }
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
            try await store.writingAfterReads { try store.delete(object) }
        }

        /// Deletes every row of a model's table; as ``ModelStore/deleteAll(_:)``, reading the
        /// rows and children its delete rules apply to.
        ///
        /// ```swift
        /// try await store.async.deleteAll(TodoList.self)
        /// ```
        public func deleteAll<Model: TrackedModel>(_ type: Model.Type) async throws {
            try store.checkOpen("deleteAll")
            try await store.writingAfterReads { try store.deleteAll(type) }
        }

        /// Live results of a descriptor; as ``ModelStore/results(for:)``.
        ///
        /// ```swift
        /// let busy = try await store.async.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        /// ```
        public func results<Model: TrackedModel>(for descriptor: FetchDescriptor<Model>) async throws -> FetchedResults<Model> {
            try store.checkOpen("results(for:)")
            let plan = try store.compile(descriptor)
            // Read and made in one run, with no await between: no change can fall in a gap.
            return try await store.reading(sideEffects: true) {
                FetchedResults(store: store, plan: plan, matching: try store.matchingRows(plan, windowed: false))
            }
        }
    }

    /// Runs synchronous read code with the database's reads answered; on an engine across a
    /// network, fetches what a run missed and runs the code again, until a run finds every
    /// answer it needs. Each run is synchronous, so it sees the store in one state; answers
    /// fetched before the store applied new committed data (its own commit, another
    /// connection's) are fetched again, so that what a run returns is never older than what
    /// the store has applied.
    ///
    /// - Parameter sideEffects: Whether `body` changes anything before its last read: then a
    ///   missing read ends a run, so that nothing after it happens twice. Without, a missing
    ///   read is answered as empty and the run goes on, so that one run finds every read.
    /// - Throws: ``StoreError/Code/busy`` when the data kept changing under the read for
    ///   ``maximumReadRounds`` rounds.
    /// - Parameter isDone: Whether a run that missed reads is final all the same (see
    ///   ``writingAfterReads(_:)``).
    func reading<Result>(sideEffects: Bool, isDone: () -> Bool = { false }, _ body: () throws -> Result) async throws -> Result {
        guard let remote = reader as? any RemoteEngineReader else { return try body() }
        var answers: [RemoteRead: [[SQLValue]]] = [:]
        var answeredAt = deliveries
        // Why rounds ended, for the error: new data arrived, or the run needed more reads.
        var overtaken = 0
        var lastMisses: Set<RemoteRead> = []
        for _ in 0..<Self.maximumReadRounds {
            if deliveries != answeredAt {
                answers = [:]
                answeredAt = deliveries
            }
            let run = remote.answering(from: answers, stopsAtMiss: sideEffects, body)
            if run.misses.isEmpty || isDone() { return try run.result.get() }
            try Task.checkCancellation()
            lastMisses = run.misses
            let fetchedFrom = deliveries
            let fetched = try await remote.read(run.misses)
            try checkOpen("read")
            guard deliveries == fetchedFrom else {
                overtaken += 1
                continue
            }
            answers.merge(fetched) { _, new in new }
        }
        let missed = lastMisses.map { String($0.sql.prefix(120)) }.sorted().prefix(3).joined(separator: " | ") + (lastMisses.count > 3 ? " and \(lastMisses.count - 3) more" : "")
        throw StoreError(
            code: .busy,
            message: "the read did not settle in \(Self.maximumReadRounds) rounds (\(overtaken) overtaken by new data, the others needing more reads; last missing: \(missed)); try again",
            mayPass: true
        )
    }

    /// Runs a write that reads first (a delete whose rules find the children) as one
    /// transaction, with its reads answered as ``reading(sideEffects:_:)`` answers them: a run
    /// that missed a read, even one a relationship's getter swallowed, is taken back whole and
    /// made again once the read is fetched.
    ///
    /// Once a run has kept the write, it is done: a read a subscriber missed while the write's
    /// events were delivered (inside the run) is the subscriber's, and the write is not made
    /// again.
    func writingAfterReads(_ write: () throws -> Void) async throws {
        var kept = false
        try await reading(sideEffects: false, isDone: { kept }) {
            try transaction {
                try write()
                if let remote = reader as? any RemoteEngineReader, remote.isMissingReads { throw RemoteReadPending() }
            }
            kept = true
        }
    }

    /// Runs a read later on the store's actor, awaiting the server, and hands its result to
    /// `then` there: for the paths that keep live results current, which run synchronously
    /// while a change is delivered. Nothing happens when the store closed meanwhile or the read
    /// failed (the row is judged again on its next change).
    func readLater<Result>(_ read: @escaping () throws -> Result, then: @escaping (Result) -> Void) {
        lastReadLater += 1
        let later = ReadLater(store: self, number: lastReadLater, read: read, then: then)
        let isolation = isolation
        readsLater[lastReadLater] = Task { await later.run(on: isolation) }
    }

    /// Returns once every read ``readLater(_:then:)`` started has placed its result (also
    /// those they started in turn).
    func placedReadsLater() async {
        while let (number, task) = readsLater.first {
            await task.value
            readsLater[number] = nil
        }
    }

    /// How many rounds a read takes at most (see ``reading(sideEffects:_:)``).
    static let maximumReadRounds = 64
}

/// A read that ``ModelStore/readLater(_:then:)`` runs in a task of its own.
private struct ReadLater<Result>: @unchecked Sendable {
    // @unchecked Sendable: the store and the closures belong to the store's actor, and are used
    // only in `run(on:)`, which runs isolated to that actor.
    let store: ModelStore
    let number: UInt64
    let read: () throws -> Result
    let then: (Result) -> Void

    func run(on actor: isolated any Actor) async {
        defer { store.readsLater[number] = nil }
        guard !store.isClosed, let result = try? await store.reading(sideEffects: false, read) else { return }
        then(result)
    }
}
