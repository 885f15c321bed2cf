extension ModelStore {
    /// Loads, for fetched objects, what a descriptor's ``FetchDescriptor/relationshipKeyPathsForPrefetching``
    /// names: the targets of a to-one relationship (one read for all of them), or the children
    /// of a to-many (one read for all parents). Reading the relationship then asks the database
    /// nothing.
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/unsupportedPredicate``) for a key path that
    ///   names no relationship; ``StoreError`` when the database cannot be read.
    func prefetch<Model: TrackedModel>(_ keyPaths: [PartialKeyPath<Model>], of objects: [Model]) throws {
        for step in try prefetchSteps(keyPaths, of: objects) { try step.place(reads.now(step.read)) }
    }

    /// ``prefetch(_:of:)``, the reads awaited.
    func prefetchAwaitingReads<Model: TrackedModel>(_ keyPaths: [PartialKeyPath<Model>], of objects: [Model]) async throws {
        for step in try prefetchSteps(keyPaths, of: objects) { try step.place(await reads.awaited(step.read)) }
    }

    /// One key path's prefetch: a read, and what is done with its rows once read (in the same
    /// synchronous run).
    private struct PrefetchStep {
        let read: EachRead<MatchingRows>
        let place: ([[[SQLValue]]]) throws -> Void
    }

    private func prefetchSteps<Model: TrackedModel>(_ keyPaths: [PartialKeyPath<Model>], of objects: [Model]) throws -> [PrefetchStep] {
        guard !objects.isEmpty else { return [] }
        let schema = Model._$schema
        return try keyPaths.map { keyPath in
            if let column = Model._$columnIndex(of: keyPath), let reference = schema.columns[column].reference {
                return try prefetchTargets(column: column, table: registrar.tableIndex(of: reference.model), of: objects)
            }
            if let relationship = schema.relationships.firstIndex(where: { $0.keyPath == keyPath }) {
                return try prefetchChildren(relationship: relationship, of: objects)
            }
            throw StoreError(
                code: .unsupportedPredicate,
                message: "relationshipKeyPathsForPrefetching names \(keyPath), which is no relationship of \(Model.self); name a to-one property (\\.list) or a to-many one (\\.rows)"
            )
        }
    }

    /// Reads the rows that a to-one column of `objects` points at and that this store does not
    /// hold yet, in one statement per 500 keys; each object then keeps its target, as reading
    /// the property would, without the read (which would make whoever tracks the fetch depend
    /// on every object's property).
    private func prefetchTargets<Model: TrackedModel>(column: Int, table: Int, of objects: [Model]) -> PrefetchStep {
        var keys: [SQLValue] = []
        var seen: Set<SQLValue> = []
        for object in objects {
            let key = object._$tracking.foreignKeys[column] ?? .null
            guard key != .null, registrar.identityMap.object(table: table, shownAs: key) == nil, seen.insert(key).inserted else { continue }
            keys.append(key)
        }
        return PrefetchStep(read: rows(of: table, where: registrar.schemas[table].primaryKeyIndex, isIn: keys)) { [unowned self] found in
            let targets = try found.joined().map { try anyObject(table: table, values: $0) }
            for object in objects where object._$relatedObject(column: column) == nil {
                let key = object._$tracking.foreignKeys[column] ?? .null
                if key != .null, let target = registrar.identityMap.object(table: table, shownAs: key) { object._$setRelatedObject(target, column: column) }
            }
            withExtendedLifetime(targets) {}
        }
    }

    /// Reads the children of every parent among `objects` in one statement per 500 parents, and
    /// records each parent's (none included) as a read of the relationship would, holding them
    /// until that read.
    private func prefetchChildren(relationship: Int, of parents: [some TrackedModel]) throws -> PrefetchStep {
        let parentTable = parents[0]._$tracking.table
        let schema = registrar.schemas[parentTable].relationships[relationship]
        let childTable = try registrar.tableIndex(of: schema.child)
        let keys = parents.map(\._$tracking.key).filter { $0 != .null }
        return PrefetchStep(read: rows(of: childTable, where: schema.childColumn, isIn: keys)) { [unowned self] found in
            var children: [SQLValue: [any TrackedModel]] = [:]
            for values in found.joined() {
                children[values[schema.childColumn], default: []].append(try anyObject(table: childTable, values: values))
            }
            for key in keys {
                registrar.relationships.didPrefetch(children[key] ?? [], parentTable: parentTable, relationship: relationship, parentKey: key)
            }
        }
    }

    /// The current rows of a table whose column holds one of `keys`, in key order, 500 keys a
    /// statement.
    private func rows(of table: Int, where column: Int, isIn keys: [SQLValue]) -> EachRead<MatchingRows> {
        let schema = registrar.schemas[table]
        return EachRead(reads: stride(from: 0, to: keys.count, by: 500).map { start in
            reads.matching(CompiledQuery(
                table: table, schema: schema, predicate: .isIn(.column(column), Array(keys[start..<min(start + 500, keys.count)])),
                sort: [CompiledQuery.SortTerm(column: schema.primaryKeyIndex, ascending: true)], columnsRead: [column],
                limit: nil, offset: 0
            ), windowed: false)
        })
    }

    /// The identity-mapped object of a row of any of the store's tables.
    func anyObject(table: Int, values: [SQLValue]) throws -> any TrackedModel {
        func make<Model: TrackedModel>(_ type: Model.Type) throws -> any TrackedModel {
            try object(type, table: table, values: values)
        }
        return try make(registrar.types[table])
    }
}
