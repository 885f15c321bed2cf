extension ModelStore {
    /// Loads, for fetched objects, what a descriptor's ``FetchDescriptor/relationshipKeyPathsForPrefetching``
    /// names: the targets of a to-one relationship (one read for all of them), or the children
    /// of a to-many (one read for all parents). Reading the relationship then asks the database
    /// nothing.
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/unsupportedPredicate``) for a key path that
    ///   names no relationship; ``StoreError`` when the database cannot be read.
    func prefetch<Model: TrackedModel>(_ keyPaths: [PartialKeyPath<Model>], of objects: [Model]) throws {
        guard !objects.isEmpty else { return }
        let schema = Model._$schema
        for keyPath in keyPaths {
            if let column = Model._$columnIndex(of: keyPath), let reference = schema.columns[column].reference {
                let targetTable = try registrar.tableIndex(of: reference.model)
                let targets = try prefetchTargets(column: column, table: targetTable, of: objects)
                // Each object keeps its target, as reading the property would, without the read
                // (which would make whoever tracks this fetch depend on every object's property).
                for object in objects where object._$relatedObject(column: column) == nil {
                    let key = object._$tracking.foreignKeys[column] ?? .null
                    if key != .null, let target = registrar.object(table: targetTable, key: key) { object._$setRelatedObject(target, column: column) }
                }
                withExtendedLifetime(targets) {}
            } else if let relationship = schema.relationships.firstIndex(where: { $0.keyPath == keyPath }) {
                try prefetchChildren(relationship: relationship, of: objects)
            } else {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "relationshipKeyPathsForPrefetching names \(keyPath), which is no relationship of \(Model.self); name a to-one property (\\.list) or a to-many one (\\.rows)"
                )
            }
        }
    }

    /// The objects of the rows that a to-one column of `objects` points at and that this store
    /// does not hold yet, read in one statement per 500 keys.
    private func prefetchTargets(column: Int, table: Int, of objects: [some TrackedModel]) throws -> [any TrackedModel] {
        var keys: [SQLValue] = []
        var seen: Set<SQLValue> = []
        for object in objects {
            let key = object._$tracking.foreignKeys[column] ?? .null
            guard key != .null, registrar.object(table: table, key: key) == nil, seen.insert(key).inserted else { continue }
            keys.append(key)
        }
        let schema = registrar.schemas[table]
        return try rows(of: table, where: schema.primaryKeyIndex, isIn: keys).map { try anyObject(table: table, values: $0) }
    }

    /// Reads the children of every parent among `objects` in one statement per 500 parents, and
    /// records each parent's (none included) as a read of the relationship would, holding them
    /// until that read.
    private func prefetchChildren(relationship: Int, of parents: [some TrackedModel]) throws {
        guard let parent = parents.first, let memberships = registrar.memberships else { return }
        let parentTable = parent._$tracking.table
        let schema = registrar.schemas[parentTable].relationships[relationship]
        let childTable = try registrar.tableIndex(of: schema.child)
        let keys = parents.map(\._$tracking.key).filter { $0 != .null }
        var children: [SQLValue: [any TrackedModel]] = [:]
        for values in try rows(of: childTable, where: schema.childColumn, isIn: keys) {
            children[values[schema.childColumn], default: []].append(try anyObject(table: childTable, values: values))
        }
        for key in keys {
            let found = children[key] ?? []
            memberships.didRead(
                parentTable: parentTable, relationship: relationship, parentKey: key, children: found.map(\._$tracking.key), holding: found
            )
        }
    }

    /// The current rows of a table whose column holds one of `keys`, in key order.
    private func rows(of table: Int, where column: Int, isIn keys: [SQLValue]) throws -> [[SQLValue]] {
        let schema = registrar.schemas[table]
        var rows: [[SQLValue]] = []
        for start in stride(from: 0, to: keys.count, by: 500) {
            let plan = CompiledQuery(
                table: table, schema: schema, predicate: .isIn(.column(column), Array(keys[start..<min(start + 500, keys.count)])),
                sort: [CompiledQuery.SortTerm(column: schema.primaryKeyIndex, ascending: true)], columnsRead: [column],
                limit: nil, offset: 0
            )
            rows += try matchingRows(plan, windowed: false)
        }
        return rows
    }

    /// The identity-mapped object of a row of any of the store's tables.
    private func anyObject(table: Int, values: [SQLValue]) throws -> any TrackedModel {
        func make<Model: TrackedModel>(_ type: Model.Type) throws -> any TrackedModel {
            try object(type, table: table, values: values)
        }
        return try make(registrar.types[table])
    }
}
