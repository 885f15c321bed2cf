import Logging

extension ModelStore {
    /// Refuses models whose relationships lead to a model the store does not manage.
    static func checkRelationships(of models: [any TrackedModel.Type]) throws {
        let managed = Set(models.map { ObjectIdentifier($0) })
        func refuse(_ model: any TrackedModel.Type, _ property: String, _ other: String) -> StoreError {
            StoreError(
                code: .modelNotRegistered,
                message: "\(model).\(property) points at \(other), which is not one of this store's models; pass \(other) in `models:` too"
            )
        }
        for model in models {
            for column in model._$schema.columns {
                guard let reference = column.reference, !managed.contains(reference.model) else { continue }
                throw refuse(model, column.property, reference.modelName)
            }
            for relationship in model._$schema.relationships where !managed.contains(relationship.child) {
                throw refuse(model, relationship.property, relationship.childName)
            }
        }
    }

    /// The object of a row a to-one relationship points at, loaded as ``find(_:key:)`` loads
    /// it; `nil` when there is no such row. A read that fails is logged and gives `nil`: a
    /// property read cannot throw (fetch the target to see the error).
    func loadRelatedObject(table: Int, key: SQLValue) -> (any TrackedModel)? {
        guard !isClosed else { return nil }
        func load<Model: TrackedModel>(_ type: Model.Type) throws -> Model? {
            try reads.now(reads.current(RowReference(table: table, key: key))).map { try object(type, table: table, values: $0) }
        }
        do {
            return try load(registrar.types[table])
        } catch {
            logger.error("cannot load the \(registrar.types[table]) with key \(key) that a relationship points at: \(error)")
            return nil
        }
    }
}

extension ModelStore {
    /// The objects of the rows of a table whose column holds a key, in key order, with this
    /// store's changes not yet committed counted. A read that fails is logged and throws.
    func loadChildren(table: Int, column: Int, key: SQLValue) throws -> [any TrackedModel] {
        guard !isClosed else { return [] }
        do {
            return try reads.now(reads.children(table: table, column: column, key: key)).map { try anyObject(table: table, values: $0) }
        } catch let error as StoreError {
            logger.error("cannot read the \(registrar.types[table]) rows whose \(registrar.schemas[table].columns[column].name) is \(key): \(error)")
            throw error
        }
    }

    /// Reads, awaited, what deleting rows and applying their delete rules reads: the children
    /// each rule applies to (and theirs, where it cascades), each child's row as committed too
    /// (the deletion changes them, and may let go of their objects before a later rule reads
    /// them). Read again from the start when committed data arrived meanwhile, so that the
    /// answers are of one moment.
    ///
    /// - Parameter first: The read that finds the rows (a `deleteAll`'s), when they are not
    ///   given.
    func readsForDeleting(table: Int, keys: [SQLValue], first: MatchingRows? = nil) async throws -> ReadAnswers {
        for _ in 0..<StoreReads.maximumRounds {
            let startedAt = reads.deliveries
            var answers = ReadAnswers()
            var rows = keys
            if let first {
                let keyColumn = registrar.schemas[table].primaryKeyIndex
                rows += try await reads.awaited(first, keeping: &answers).map { $0[keyColumn] }
            }
            var frontier = rows.map { RowReference(table: table, key: $0) }
            var seen = Set(frontier)
            while let parent = frontier.popLast(), reads.deliveries == startedAt {
                for (childTable, column, cascades) in deleteRules(table: parent.table) {
                    let keyColumn = registrar.schemas[childTable].primaryKeyIndex
                    // A child waiting for its key makes the delete refuse (it reads nothing
                    // more), and the database holds no row of it.
                    let children = try await reads.awaited(reads.children(table: childTable, column: column, key: parent.key), keeping: &answers)
                        .map { RowReference(table: childTable, key: $0[keyColumn]) }
                        .filter { KeyPlaceholder.request(in: $0.key) == nil }
                    _ = try await reads.awaited(EachRead(reads: children.map(reads.committed)), keeping: &answers)
                    if cascades { frontier += children.filter { seen.insert($0).inserted } }
                }
            }
            if reads.deliveries == startedAt { return answers }
        }
        throw StoreError(code: .busy, message: "the rows to delete kept changing under the delete (other connections committing); try again", mayPass: true)
    }

    /// The delete rules that apply when a row of the table is deleted: each child table and
    /// column, and whether the rule deletes the children too.
    private func deleteRules(table: Int) -> [(childTable: Int, column: Int, cascades: Bool)] {
        let relationships = registrar.schemas[table].relationships.compactMap { relationship in
            (try? registrar.tableIndex(of: relationship.child)).map { ($0, relationship.childColumn, relationship.deleteRule == .cascade) }
        }
        return relationships + databaseDeleteRules[table].map { ($0.childTable, $0.column, $0.rule == .cascade) }
    }

    /// Whether deleting a row of the table applies delete rules: its model's to-many
    /// relationships, or `ON DELETE` actions the database declares for columns that point at it.
    func hasDeleteRules(table: Int) -> Bool {
        !registrar.schemas[table].relationships.isEmpty || !databaseDeleteRules[table].isEmpty
    }

    /// Deletes an object after applying the delete rules of its to-many relationships, and the
    /// `ON DELETE` actions the database declares for to-one columns no relationship names: its
    /// children are deleted (cascade, with their own rules), pointed at nothing (nullify), or
    /// the delete is refused while it has any (deny). Call inside a transaction, so that a
    /// refusal takes back what the rules had done.
    func deleteApplyingRules(_ object: any TrackedModel, table: Int, deleting: inout Set<ObjectIdentifier>) throws {
        deleting.insert(ObjectIdentifier(object))
        let schema = registrar.schemas[table]
        for relationship in schema.relationships {
            try apply(
                relationship.deleteRule, to: object, table: table, childTable: registrar.tableIndex(of: relationship.child),
                column: relationship.childColumn, deleting: &deleting,
                children: "\(relationship.childName) in \(relationship.property)", rule: "whose delete rule is .\(relationship.deleteRule)"
            )
        }
        for action in databaseDeleteRules[table] {
            let column = registrar.schemas[action.childTable].columns[action.column]
            try apply(
                action.rule, to: object, table: table, childTable: action.childTable, column: action.column, deleting: &deleting,
                children: "\(registrar.types[action.childTable]) whose \(column.property) points at it",
                rule: "and the table \(registrar.schemas[action.childTable].name) declares \(action.declared) for \(column.name)"
            )
        }
        registrar.userDidDelete(object, table: table)
    }

    /// Applies one delete rule to the children of `object` through a to-one column.
    ///
    /// - Parameters:
    ///   - children: The children, for messages (`Row in rows`).
    ///   - rule: Where the rule comes from, for messages (`whose delete rule is .deny`).
    private func apply(
        _ deleteRule: DeleteRule, to object: any TrackedModel, table: Int, childTable: Int, column: Int,
        deleting: inout Set<ObjectIdentifier>, children: String, rule: String
    ) throws {
        func read<Child: TrackedModel>(_ type: Child.Type) throws -> [any TrackedModel] {
            try registrar.children(type, column: column, of: object)
        }
        let found = try read(registrar.types[childTable]).filter { !deleting.contains(ObjectIdentifier($0)) }
        guard !found.isEmpty else { return }
        switch deleteRule {
        case .deny:
            throw StoreError(
                code: .deleteDenied,
                message: "\(registrar.types[table]) \(object._$tracking.key) still has \(found.count) \(children), \(rule); delete them or point them elsewhere first (nothing changed)"
            )
        case .nullify:
            // A child whose insert waits for its key would take the change in that insert, a
            // unit of its own that could commit without this delete.
            try refuseWaiting(found, of: object, table: table, children: children)
            for child in found { registrar.nullify(child, column: column) }
        case .cascade:
            try refuseWaiting(found, of: object, table: table, children: children)
            for child in found { try deleteApplyingRules(child, table: childTable, deleting: &deleting) }
        }
    }

    private func refuseWaiting(_ found: [any TrackedModel], of object: any TrackedModel, table: Int, children: String) throws {
        guard found.contains(where: { $0._$tracking.insertRequest != nil }) else { return }
        throw StoreError(
            code: .notAttached,
            message: "cannot delete \(registrar.types[table]) \(object._$tracking.key): a \(children) waits for the key the database assigns; flush (or await committedKey(of:)) first (nothing changed)"
        )
    }
}
