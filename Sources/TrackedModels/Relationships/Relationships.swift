import Foundation

/// The store's relationships, as a part of their own: reading a to-one's target and a
/// to-many's children through the store, and telling the parents a child's change reaches
/// (through ``Memberships``, and directly for parents whose key the database has yet to assign,
/// which are not heard by key).
///
/// It owns what relationships keep between reads (who was read as whose child, children loaded
/// ahead of a read). It finds objects in the identity map and the rows waiting to be written in
/// write-behind, and changes neither itself (the store's loaders it calls attach the objects
/// they read, through the registrar). The registrar tells it of the program's changes and of
/// the database's, and it tells observers.
///
/// ```swift
/// let rows = list.rows   // the registrar notes the read, then `children(Row.self, column:of:)`
/// ```
final class Relationships {
    private let schemas: [TableSchema]
    private let identityMap: IdentityMap
    private let writeBehind: WriteBehind
    private let outbox: Outbox
    private let tableOf: (ObjectIdentifier) -> Int?
    /// Which parents hear a change of a child row; nil when no model has a to-many relationship.
    private var memberships: Memberships?
    /// Loads a row's object through the store, for a to-one relationship read; set by the store.
    var loadObject: ((_ table: Int, _ key: SQLValue) -> (any TrackedModel)?)?
    /// Loads the objects of the rows of a table whose column holds a key, in key order, for a
    /// to-many relationship read; set by the store.
    var loadChildren: ((_ table: Int, _ column: Int, _ key: SQLValue) throws -> [any TrackedModel])?

    init(schemas: [TableSchema], identityMap: IdentityMap, writeBehind: WriteBehind, outbox: Outbox, tableOf: @escaping (ObjectIdentifier) -> Int?) {
        self.schemas = schemas
        self.identityMap = identityMap
        self.writeBehind = writeBehind
        self.outbox = outbox
        self.tableOf = tableOf
        guard schemas.contains(where: { !$0.relationships.isEmpty }) else { return }
        let memberships = Memberships(
            schemas: schemas, tableOf: tableOf,
            notify: { [unowned self] table, key, relationship, origin in
                self.identityMap.object(table: table, key: key)?._$childrenChanged(relationship: relationship)
                let parent = RowReference(table: table, key: key)
                guard self.outbox.feeds.hasSubscriptions(.children(parent, relationship: relationship)) else { return }
                if let origin { self.outbox.postChildren(table: table, key: key, relationship: relationship, origin: origin) }
                // A feed stays: what the children are now is what its next change is told from.
                recordChildren(of: parent, relationship: relationship)
            },
            parentKeys: { [unowned self] table, relationship in
                self.identityMap.objects(table: table).map(\.key) + self.outbox.feeds.childrenKeys(table: table, relationship: relationship)
            }
        )
        self.memberships = memberships
        outbox.memberships = memberships
    }

    // MARK: - Reads

    /// The target of a to-one relationship: its object in the identity map, or its row loaded
    /// through the store; `nil` when there is no such row (or reading it failed, which the
    /// store logs).
    func target<Target: TrackedModel>(_ type: Target.Type, key: SQLValue) -> Target? {
        guard let table = tableOf(ObjectIdentifier(type)) else { return nil }
        if let object = identityMap.object(table: table, shownAs: key) { return object as? Target }
        return loadObject?(table, key) as? Target
    }

    /// The to-many relationship of a parent's table whose children are `Child`'s rows through
    /// `column`.
    func relationship(parentTable: Int, child: any TrackedModel.Type, column: Int) -> Int? {
        tableOf(ObjectIdentifier(child)).flatMap { memberships?.relationship(parentTable: parentTable, childTable: $0, column: column) }
    }

    /// The children of `parent` through a to-one column of `Child`'s table: its rows that hold
    /// the parent's key, in key order, then the children whose insert waits for its key, in the
    /// order they were inserted (a read of the store shows both).
    ///
    /// The rows are those the last read found while no change of them was told since (their
    /// objects, when all are alive), else read through the store. A read is recorded, so that
    /// another process re-pointing one of them reaches the parent's observers; a read that
    /// failed (or that PostgreSQL has yet to answer) is not, and throws.
    func children<Child: TrackedModel>(_ type: Child.Type, column: Int, of parent: some TrackedModel) throws -> [Child] {
        guard let childTable = tableOf(ObjectIdentifier(type)) else { return [] }
        let parentTracking = parent._$tracking
        var found: [Child] = []
        if parentTracking.key != .null {
            let relationship = memberships?.relationship(parentTable: parentTracking.table, childTable: childTable, column: column)
            let recorded = relationship.flatMap {
                memberships?.recordedChildren(parentTable: parentTracking.table, relationship: $0, parentKey: parentTracking.key)
            }
            let alive = recorded?.keys.compactMap { identityMap.object(table: childTable, shownAs: $0) as? Child }
            withExtendedLifetime(recorded?.held) {}
            if let recorded, let alive, alive.count == recorded.keys.count {
                found = alive
            } else {
                found = try (loadChildren?(childTable, column, parentTracking.key) ?? []).compactMap { $0 as? Child }
                if let relationship {
                    memberships?.didRead(
                        parentTable: parentTracking.table, relationship: relationship, parentKey: parentTracking.key,
                        children: found.map(\._$tracking.rowKey)
                    )
                }
            }
        }
        if let request = parentTracking.insertRequest {
            // The parent has no key yet: its children are the rows written with its key's
            // placeholder.
            for row in writeBehind.rowsLinking(toInsert: request, table: childTable, column: column) {
                let child: (any TrackedModel)? = switch row {
                case .key(let key): identityMap.object(table: childTable, key: key) ?? loadObject?(childTable, key)
                case .insert(let request): identityMap.unkeyed[request]?.object
                }
                if let child = child as? Child, !found.contains(where: { $0 === child }) { found.append(child) }
            }
        }
        return found
    }

    /// The children of a parent that the store holds objects for, in key order (those whose
    /// key the database has yet to assign last): what a to-many shows when reading the rest
    /// failed.
    func loadedChildren<Child: TrackedModel>(_ type: Child.Type, column: Int, of parent: some TrackedModel) -> [Child] {
        guard let childTable = tableOf(ObjectIdentifier(type)) else { return [] }
        let key = parent._$tracking.key
        let keyed = identityMap.objects(table: childTable).filter { entry in
            let foreignKey = entry.object._$tracking.foreignKeys[column] ?? .null
            return key != .null ? foreignKey == key : entry.object._$relatedObject(column: column) === parent
        }
        let waiting = identityMap.unkeyedObjects(table: childTable).map(\.object).filter { $0._$relatedObject(column: column) === parent }
        return keyed.sorted { SQLValue.compare($0.key, $1.key) == .orderedAscending }.compactMap { $0.object as? Child }
            + waiting.compactMap { $0 as? Child }
    }

    /// Reads and records the children of a parent's to-many relationship, for a feed of them:
    /// a later change by another process that does not tell the child's old parent is then
    /// still heard (see ``Memberships``).
    func recordChildren(of parent: RowReference, relationship: Int) {
        let schema = schemas[parent.table].relationships[relationship]
        guard parent.key != .null, let memberships, let childTable = tableOf(schema.child) else { return }
        guard let children = try? loadChildren?(childTable, schema.childColumn, parent.key) else { return }
        memberships.didRead(
            parentTable: parent.table, relationship: relationship, parentKey: parent.key, children: children.map(\._$tracking.rowKey), answersReads: false
        )
    }

    /// Records the children a prefetch read for a parent's to-many (none included), as a read
    /// of the relationship would, holding their objects until that read.
    func didPrefetch(_ children: [any TrackedModel], parentTable: Int, relationship: Int, parentKey: SQLValue) {
        memberships?.didRead(
            parentTable: parentTable, relationship: relationship, parentKey: parentKey, children: children.map(\._$tracking.rowKey), holding: children
        )
    }

    // MARK: - Telling parents

    /// Whether a to-many relationship reads this table's rows.
    func hasParents(table: Int) -> Bool {
        memberships?.hasParents(table: table) ?? false
    }

    /// A child row changed its to-one columns (or came or went): `old` and `new` give what a
    /// link's column held before and holds now (`old` nil when the change does not tell). The
    /// parents it leaves and joins hear it; a row whose key the database has yet to assign
    /// (`key` NULL) is heard by its subscribers once it has one.
    func childChanged(
        table: Int, key: SQLValue = .null, column: Int? = nil, old: (Int) -> SQLValue?, new: (Int) -> SQLValue, origin: ChangeOrigin = .local
    ) {
        guard let memberships, memberships.hasParents(table: table) else { return }
        memberships.childChanged(table: table, key: key, column: column, old: old, new: new, origin: origin)
    }

    /// Tells the observers of a parent whose key the database has yet to assign that a child
    /// joined or left (with no key, it is not heard by key).
    func childrenChanged(of parent: any TrackedModel, childTable: Int, column: Int) {
        let tracking = parent._$tracking
        guard tracking.insertRequest != nil,
              let relationship = memberships?.relationship(parentTable: tracking.table, childTable: childTable, column: column)
        else { return }
        parent._$childrenChanged(relationship: relationship)
    }

    /// Tells the parents that an object's to-one relationships point at, and whose keys the
    /// database has yet to assign, that it came or went (they are not heard by key).
    func tellWaitingParents(of child: any TrackedModel) {
        guard memberships != nil, identityMap.hasUnkeyed else { return }
        let table = child._$tracking.table
        for column in schemas[table].relationshipColumns {
            if let target = child._$relatedObject(column: column) { childrenChanged(of: target, childTable: table, column: column) }
        }
    }

    /// Tells every parent whose key the database has yet to assign, of a table whose to-many
    /// relationships read `childTable`, that its children may have changed.
    func tellWaitingParents(ofChildTable childTable: Int) {
        guard let memberships, identityMap.hasUnkeyed else { return }
        for link in memberships.parentLinks(ofChildTable: childTable) {
            for (_, object) in identityMap.unkeyedObjects(table: link.parentTable) {
                object._$childrenChanged(relationship: link.relationship)
            }
        }
    }

    // MARK: - Transactions and lifetime

    /// An outermost transaction begins: the parents it tells are noted until it ends.
    func transactionBegan() {
        memberships?.startTracking()
    }

    /// A transaction level failed. Observation heard the children's changes as they were made:
    /// the parents told then (and those waiting for their key, of the child tables it touched)
    /// have their objects' observers told that they are taken back. Feeds heard nothing of them.
    func transactionFailed() {
        guard let memberships else { return }
        memberships.transactionFailed()
        for table in memberships.touchedTables.sorted() { tellWaitingParents(ofChildTable: table) }
    }

    /// The outermost transaction ended.
    func transactionEnded() {
        memberships?.stopTracking()
    }

    /// A parent's object went away: what it was read with is forgotten, but for relationships
    /// a feed still watches.
    func parentWentAway(table: Int, key: SQLValue) {
        let parent = RowReference(table: table, key: key)
        memberships?.forget(parentTable: table, key: key) { [outbox] relationship in
            outbox.feeds.hasSubscriptions(.children(parent, relationship: relationship))
        }
    }

    /// Forgets every record and lets go of every prefetched child: the store closed.
    func forgetAll() {
        memberships?.forgetAll()
    }
}
