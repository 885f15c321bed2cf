/// Subscriptions by what they watch, so that a change reaches exactly its subscribers.
///
/// Keys are a cell (table, row, column), a row, a column of every row, a whole table, and a
/// table's membership (inserts and deletes). A change looks up at most four keys, so its cost
/// is O(subscribers notified), whatever the number of rows or of other subscriptions.
final class FeedIndex {
    enum Key: Hashable {
        case cell(CellReference)
        case row(RowReference)
        case column(table: Int, column: Int)
        case table(Int)
        case membership(Int)
        /// The children of one parent's to-many relationship.
        case children(RowReference, relationship: Int)
        /// Rows of a table that live results must judge again though no column a subscriber
        /// sees changed: an insert whose key the database has yet to assign (named by its
        /// key's placeholder), or a row whose to-one now reaches, or no longer reaches, such
        /// an insert. Only the store's live results subscribe to it.
        case reevaluation(Int)
    }

    final class Subscription {
        let id: UInt64
        let keys: [Key]
        /// The columns the subscriber asked for; `nil` for all.
        let columns: Set<Int>?
        /// Cancelled after its first event (dependency capture).
        let isOneShot: Bool
        let handler: (ChangeEvent) -> Void
        var isCancelled = false

        init(id: UInt64, keys: [Key], columns: Set<Int>?, isOneShot: Bool, handler: @escaping (ChangeEvent) -> Void) {
            self.id = id
            self.keys = keys
            self.columns = columns
            self.isOneShot = isOneShot
            self.handler = handler
        }
    }

    /// The subscriptions of one key, in subscription order. Cancelled ones are skipped and
    /// swept out once they are half the bucket, so that cancelling is amortized O(1) even for
    /// a key with a million subscribers.
    struct Bucket {
        var subscriptions: [Subscription] = []
        var cancelled = 0

        var live: Int { subscriptions.count - cancelled }
    }

    let schemas: [TableSchema]
    private var buckets: [Key: Bucket] = [:]
    private var byID: [UInt64: Subscription] = [:]
    private var lastID: UInt64 = 0
    /// Keys in use, by table and kind: a write skips the lookups of kinds nobody subscribed to.
    private var keysInUse: [[Int]]
    /// Keys in use, by table: a write to a table nobody subscribed to posts nothing.
    private var keysInUseByTable: [Int]

    init(schemas: [TableSchema]) {
        self.schemas = schemas
        keysInUse = Array(repeating: Array(repeating: 0, count: Key.kindCount), count: schemas.count)
        keysInUseByTable = Array(repeating: 0, count: schemas.count)
    }

    /// Whether anyone subscribed to changes of the table, in any scope.
    func hasSubscriptions(table: Int) -> Bool {
        keysInUseByTable[table] > 0
    }

    /// The keys of the parents whose to-many relationship someone subscribed to the children of.
    func childrenKeys(table: Int, relationship: Int) -> [SQLValue] {
        guard keysInUse[table][Key.childrenKind] > 0 else { return [] }
        return buckets.keys.compactMap { key in
            guard case .children(let parent, let watched) = key, parent.table == table, watched == relationship else { return nil }
            return parent.key
        }
    }

    /// Whether anyone subscribed to a key.
    func hasSubscriptions(_ key: Key) -> Bool {
        buckets[key] != nil
    }

    /// Live subscriptions.
    var count: Int { byID.count }

    // MARK: - Subscribing

    func add(keys: [Key], columns: Set<Int>?, isOneShot: Bool = false, handler: @escaping (ChangeEvent) -> Void) -> FeedToken {
        lastID += 1
        let subscription = Subscription(id: lastID, keys: keys, columns: columns, isOneShot: isOneShot, handler: handler)
        for key in keys {
            buckets[key, default: Bucket()].subscriptions.append(subscription)
            keysInUse[key.table][key.kind] += 1
            keysInUseByTable[key.table] += 1
        }
        byID[subscription.id] = subscription
        return FeedToken(index: self, subscription: subscription)
    }

    func remove(_ subscription: Subscription) {
        guard !subscription.isCancelled else { return }
        subscription.isCancelled = true
        byID.removeValue(forKey: subscription.id)
        for key in subscription.keys {
            keysInUse[key.table][key.kind] -= 1
            keysInUseByTable[key.table] -= 1
            guard var bucket = buckets.removeValue(forKey: key) else { continue }
            bucket.cancelled += 1
            if bucket.cancelled * 2 > bucket.subscriptions.count {
                bucket.subscriptions.removeAll { $0.isCancelled }
                bucket.cancelled = 0
            }
            if bucket.live > 0 { buckets[key] = bucket }
        }
    }

    func remove(id: UInt64) {
        if let subscription = byID[id] { remove(subscription) }
    }

    /// Checks that no cancelled subscription is left in a bucket and that every live one is.
    func checkInvariants() {
        for (table, counts) in keysInUse.enumerated() {
            for (kind, count) in counts.enumerated() {
                precondition(count == buckets.reduce(0) { $0 + ($1.key.table == table && $1.key.kind == kind ? $1.value.live : 0) }, "key count of table \(table), kind \(kind) is off")
            }
        }
        for (key, bucket) in buckets {
            precondition(bucket.live > 0, "a bucket with no live subscription is left for \(key)")
            precondition(bucket.cancelled * 2 <= bucket.subscriptions.count, "cancelled subscriptions were not swept from \(key)")
            precondition(bucket.subscriptions.count { $0.isCancelled } == bucket.cancelled, "cancelled count of \(key) is off")
            for subscription in bucket.subscriptions where !subscription.isCancelled {
                precondition(byID[subscription.id] === subscription, "live subscription under \(key) is not indexed")
            }
        }
    }

    // MARK: - Delivering

    /// The subscriptions a change of these columns of a row reaches, each once.
    func subscriptions(table: Int, key: SQLValue, columns: some Collection<Int>, membership: Bool) -> [Subscription] {
        let row = RowReference(table: table, key: key)
        let inUse = keysInUse[table]
        var found: [Subscription] = []
        var bucketsFound = 0
        // Keys of a kind nobody subscribed to on this table are not looked up. A single bucket's
        // subscriptions are handed over as they are, not copied.
        func collect(_ key: Key) {
            guard inUse[key.kind] > 0, let bucket = buckets[key], !bucket.subscriptions.isEmpty else { return }
            if found.isEmpty { found = bucket.subscriptions } else { found.append(contentsOf: bucket.subscriptions) }
            bucketsFound += 1
        }
        for column in columns {
            collect(.cell(CellReference(row: row, column: column)))
            collect(.column(table: table, column: column))
        }
        collect(.row(row))
        collect(.table(table))
        if membership { collect(.membership(table)) }
        // A subscription is in one bucket per key it has: only several buckets can repeat one.
        guard bucketsFound > 1 else { return found }
        var seen = Set<UInt64>()
        return found.filter { seen.insert($0.id).inserted }
    }

    /// Delivers one column's change to its subscribers: the hot path of every tracked write.
    func deliverUpdate(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin) {
        let row = RowReference(table: table, key: key)
        let inUse = keysInUse[table]
        var event: ChangeEvent?
        func visit(_ key: Key) {
            guard inUse[key.kind] > 0, let bucket = buckets[key]?.subscriptions else { return }
            let change = event ?? ChangeEvent(
                table: schemas[table].name, key: row.key, kind: .update,
                changes: [ColumnChange(column: schemas[table].columns[column].name, index: column, old: old, new: new)],
                origin: origin
            )
            event = change
            for subscription in bucket { deliver(change, to: subscription) }
        }
        visit(.cell(CellReference(row: row, column: column)))
        visit(.row(row))
        visit(.column(table: table, column: column))
        visit(.table(table))
    }

    /// Delivers a change of a whole row: one event per subscriber, its columns filtered to
    /// what the subscriber asked for.
    func deliver(_ event: ChangeEvent, table: Int) {
        guard !event.changes.isEmpty || event.kind != .update else { return }
        let isMembership = event.kind == .insert || event.kind == .delete
        // A subscriber of every column changed hears the event as it is.
        for subscription in subscriptions(table: table, key: event.key, columns: event.changes.lazy.map(\.index), membership: isMembership) {
            guard let wanted = subscription.columns, !event.changes.allSatisfy({ wanted.contains($0.index) }) else {
                deliver(event, to: subscription)
                continue
            }
            let changes = event.changes.filter { wanted.contains($0.index) }
            guard !changes.isEmpty || event.kind != .update else { continue }
            deliver(ChangeEvent(table: event.table, key: event.key, kind: event.kind, changes: changes, origin: event.origin), to: subscription)
        }
    }

    /// Delivers a change of a parent's to-many relationship to its subscribers.
    func deliverChildren(table: Int, key: SQLValue, relationship: Int, origin: ChangeOrigin) {
        let children = Key.children(RowReference(table: table, key: key), relationship: relationship)
        guard keysInUse[table][children.kind] > 0, let bucket = buckets[children] else { return }
        let event = ChangeEvent(
            table: schemas[table].name, key: key, kind: .children(schemas[table].relationships[relationship].property), changes: [], origin: origin
        )
        for subscription in bucket.subscriptions { deliver(event, to: subscription) }
    }

    /// Tells the live results of a table to judge a row again (see ``Key/reevaluation(_:)``).
    func deliverReevaluation(table: Int, key: SQLValue, origin: ChangeOrigin) {
        guard let bucket = buckets[.reevaluation(table)] else { return }
        let event = ChangeEvent(table: schemas[table].name, key: key, kind: .update, changes: [], origin: origin)
        for subscription in bucket.subscriptions { deliver(event, to: subscription) }
    }

    /// Delivers a reset to every subscription of a table.
    func deliverReset(table: Int, origin: ChangeOrigin) {
        let event = ChangeEvent(table: schemas[table].name, key: .null, kind: .reset, changes: [], origin: origin)
        // (Not the live results' re-evaluation feed: their subscription of the table re-reads.)
        for subscription in byID.values.sorted(by: { $0.id < $1.id })
        where subscription.keys.contains(where: { $0.table == table && $0.kind != Key.reevaluationKind }) {
            deliver(event, to: subscription)
        }
    }

    private func deliver(_ event: ChangeEvent, to subscription: Subscription) {
        guard !subscription.isCancelled else { return }
        if subscription.isOneShot { remove(subscription) }
        subscription.handler(event)
    }
}

extension FeedIndex.Key {
    static let kindCount = 7
    static let childrenKind = 5
    static let reevaluationKind = 6

    var kind: Int {
        switch self {
        case .cell: 0
        case .row: 1
        case .column: 2
        case .table: 3
        case .membership: 4
        case .children: Self.childrenKind
        case .reevaluation: Self.reevaluationKind
        }
    }

    var table: Int {
        switch self {
        case .cell(let cell): cell.row.table
        case .row(let row), .children(let row, _): row.table
        case .column(let table, _), .table(let table), .membership(let table), .reevaluation(let table): table
        }
    }
}
