import Foundation

/// Which parents' to-many relationships a change of a child row touches, so that exactly those
/// parents' observers hear it: a child inserted or deleted, or its to-one re-pointed, here or
/// by another process; never a child's other columns.
///
/// When a change tells the old parent (a local change, or a delete of a row the store held), it
/// is notified by key. When it does not (another process re-pointed or deleted a row this store
/// never loaded), the parents whose children were read with that child in them are: each read
/// of a to-many records the children it found, until its parent is next notified.
///
/// Since every change of a parent's children notifies it, the children a read recorded are
/// also what the next read finds until then: a second read of `list.rows` asks the database
/// nothing while the children's objects are alive. Children loaded ahead of a read
/// (prefetched) are held until that read. A record made for a feed of the children (whose
/// parent may have no object) only finds parents; it never answers a read.
final class Memberships {
    /// A to-many relationship seen from its children's table.
    struct Link {
        var parentTable: Int
        var relationship: Int
        var childColumn: Int
    }

    /// One parent's to-many relationship.
    private struct Membership: Hashable {
        var parentTable: Int
        var relationship: Int
        var parentKey: SQLValue
    }

    /// The links of each table, by table position (empty for a table no to-many points at).
    private let links: [[Link]]
    /// The children's table of each table's to-many relationships, by table and relationship.
    private let childTables: [[Int?]]
    /// The children each parent's to-many relationship was last read with, in order, until the
    /// parent is notified or goes away.
    private var childrenRead: [Membership: [SQLValue]] = [:]
    /// The records made by reads, while the parent's object lived: those answer the next read.
    private var answersReads: Set<Membership> = []
    /// Children loaded ahead of a read of their parent's relationship, held until it. They are
    /// let go by moving them out first: an object that goes away calls back into ``forget(parentTable:key:)``,
    /// which must not find this dictionary in the middle of a change.
    private var prefetched: [Membership: [any TrackedModel]] = [:]
    /// The same, by child row: the memberships a child was read in (so that a change that does
    /// not tell the old parent finds it without a scan).
    private var readIn: [RowReference: Set<Membership>] = [:]
    /// While a transaction runs (``startTracking()``): the child tables that changed, the
    /// parents told, and the child tables reset. A transaction that fails tells exactly those
    /// parents' objects' observers again (Observation heard its changes as they were made;
    /// feeds heard nothing of them).
    private(set) var touchedTables: Set<Int> = []
    private var touched: Set<Membership> = []
    private var resetTables: Set<Int> = []
    private var isTracking = false
    /// Tells a parent's observers that its children changed: (parent table, key, relationship,
    /// where the change came from, or nil to tell its object's observers only, and make its
    /// feed's record again).
    private let notify: (Int, SQLValue, Int, ChangeOrigin?) -> Void
    /// The keys of the parents that a reset of their children must reach, besides those with a
    /// record: the parents the store holds objects for, and those with a feed of the
    /// relationship (parent table, relationship).
    private let parentKeys: (Int, Int) -> [SQLValue]

    init(
        schemas: [TableSchema], tableOf: (ObjectIdentifier) -> Int?,
        notify: @escaping (Int, SQLValue, Int, ChangeOrigin?) -> Void, parentKeys: @escaping (Int, Int) -> [SQLValue]
    ) {
        var links = Array(repeating: [Link](), count: schemas.count)
        for (parentTable, schema) in schemas.enumerated() {
            for (index, relationship) in schema.relationships.enumerated() {
                guard let childTable = tableOf(relationship.child) else { continue }
                links[childTable].append(Link(parentTable: parentTable, relationship: index, childColumn: relationship.childColumn))
            }
        }
        self.links = links
        childTables = schemas.map { $0.relationships.map { tableOf($0.child) } }
        self.notify = notify
        self.parentKeys = parentKeys
    }

    /// The to-many relationships that read this table's rows.
    func parentLinks(ofChildTable table: Int) -> [Link] {
        links[table]
    }

    /// Whether a to-many relationship reads this table's rows.
    func hasParents(table: Int) -> Bool {
        !links[table].isEmpty
    }

    /// The relationship of `parentTable` whose children are `childTable`'s rows through `column`.
    func relationship(parentTable: Int, childTable: Int, column: Int) -> Int? {
        links[childTable].first { $0.parentTable == parentTable && $0.childColumn == column }?.relationship
    }

    /// Records the children a read of a parent's to-many found, in order; `holding` keeps
    /// their objects alive until the next read (a prefetch).
    ///
    /// - Parameter answersReads: Whether the record answers the parent's next read: a read by
    ///   the parent's object, not a feed's.
    func didRead(
        parentTable: Int, relationship: Int, parentKey: SQLValue, children: [SQLValue], holding: [any TrackedModel] = [], answersReads: Bool = true
    ) {
        let membership = Membership(parentTable: parentTable, relationship: relationship, parentKey: parentKey)
        forgetRead(membership)
        guard let childTable = childTables[parentTable][relationship] else { return }
        childrenRead[membership] = children
        if answersReads { self.answersReads.insert(membership) }
        if !holding.isEmpty { prefetched[membership] = holding }
        for key in children { readIn[RowReference(table: childTable, key: key), default: []].insert(membership) }
    }

    /// The children a parent's to-many was last read with, if no change was told since, and
    /// the objects a prefetch held for this read: the caller keeps them alive while it finds
    /// the children's objects, and the store lets go of them.
    func recordedChildren(parentTable: Int, relationship: Int, parentKey: SQLValue) -> (keys: [SQLValue], held: [any TrackedModel])? {
        let membership = Membership(parentTable: parentTable, relationship: relationship, parentKey: parentKey)
        let held = prefetched.removeValue(forKey: membership) ?? []
        guard answersReads.contains(membership) else { return nil }
        return childrenRead[membership].map { ($0, held) }
    }

    /// A child row's to-one column changed (or the row came or went): `old` and `new` give the
    /// key a link's column held before and holds now (`.null` for none; `old` nil when the
    /// change does not tell).
    func childChanged(
        table: Int, key: SQLValue, column: Int? = nil, old: (Int) -> SQLValue?, new: (Int) -> SQLValue, origin: ChangeOrigin = .local
    ) {
        for link in links[table] where column == nil || column == link.childColumn {
            if isTracking { touchedTables.insert(table) }
            var parents: Set<SQLValue> = [new(link.childColumn)]
            if let old = old(link.childColumn) {
                parents.insert(old)
            } else if key != .null {
                for membership in readIn[RowReference(table: table, key: key)] ?? []
                where membership.parentTable == link.parentTable && membership.relationship == link.relationship {
                    parents.insert(membership.parentKey)
                }
            }
            parents.remove(.null)
            for parent in parents {
                tell(Membership(parentTable: link.parentTable, relationship: link.relationship, parentKey: parent), origin: origin)
            }
        }
    }

    /// Every row of a table may have changed (a reset): every parent the store holds, every
    /// parent with a record, and every parent with a feed hears it.
    func childTableReset(table: Int, origin: ChangeOrigin = .local) {
        if isTracking {
            touchedTables.insert(table)
            resetTables.insert(table)
        }
        tellEveryParent(ofChildTable: table, origin: origin)
    }

    private func tellEveryParent(ofChildTable table: Int, origin: ChangeOrigin?) {
        for link in links[table] {
            var parents = Set(parentKeys(link.parentTable, link.relationship))
            for membership in childrenRead.keys where membership.parentTable == link.parentTable && membership.relationship == link.relationship {
                parents.insert(membership.parentKey)
            }
            for parent in parents.sorted(by: { SQLValue.compare($0, $1) == .orderedAscending }) {
                tell(Membership(parentTable: link.parentTable, relationship: link.relationship, parentKey: parent), origin: origin)
            }
        }
    }

    /// A transaction that changed children failed: the parents it told (every parent, for a
    /// table it reset) have their objects' observers told again, and nobody else; feeds hear
    /// nothing (they never heard the transaction's changes).
    func transactionFailed() {
        let parents = touched.filter { !resetTables.contains(childTables[$0.parentTable][$0.relationship] ?? -1) }
        for table in resetTables.sorted() { tellEveryParent(ofChildTable: table, origin: nil) }
        for membership in parents.sorted(by: { SQLValue.compare($0.parentKey, $1.parentKey) == .orderedAscending }) { tell(membership, origin: nil) }
    }

    /// An outermost transaction begins: what it touches is noted until it ends.
    func startTracking() {
        stopTracking()
        isTracking = true
    }

    func stopTracking() {
        isTracking = false
        touchedTables.removeAll()
        touched.removeAll()
        resetTables.removeAll()
    }

    /// Forgets what a parent that went away was read with, but for the relationships a feed
    /// still watches (`keeping`): their records go on finding the parent, and answer no read.
    func forget(parentTable: Int, key: SQLValue, keeping: (Int) -> Bool) {
        guard !childrenRead.isEmpty else { return }
        for relationship in childTables[parentTable].indices {
            let membership = Membership(parentTable: parentTable, relationship: relationship, parentKey: key)
            if keeping(relationship) {
                answersReads.remove(membership)
                let held = prefetched.removeValue(forKey: membership)
                withExtendedLifetime(held) {}
            } else {
                forgetRead(membership)
            }
        }
    }

    /// Forgets every record and lets go of every prefetched child: the store closed.
    func forgetAll() {
        childrenRead.removeAll()
        readIn.removeAll()
        answersReads.removeAll()
        let held = prefetched
        prefetched = [:]
        withExtendedLifetime(held) {}
    }

    private func forgetRead(_ membership: Membership) {
        let held = prefetched.removeValue(forKey: membership)
        defer { withExtendedLifetime(held) {} }
        answersReads.remove(membership)
        guard let children = childrenRead.removeValue(forKey: membership),
              let childTable = childTables[membership.parentTable][membership.relationship]
        else { return }
        for key in children {
            let child = RowReference(table: childTable, key: key)
            readIn[child]?.remove(membership)
            if readIn[child]?.isEmpty == true { readIn[child] = nil }
        }
    }

    private func tell(_ membership: Membership, origin: ChangeOrigin?) {
        if origin != nil, isTracking { touched.insert(membership) }
        forgetRead(membership)
        notify(membership.parentTable, membership.parentKey, membership.relationship, origin)
    }
}
