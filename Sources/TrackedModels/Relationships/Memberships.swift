/// Which parents' to-many relationships a change of a child row touches, so that exactly those
/// parents' observers hear it: a child inserted or deleted, or its to-one re-pointed, here or
/// by another process; never a child's other columns.
///
/// When a change tells the old parent (a local change, or a delete of a row the store held), it
/// is notified by key. When it does not (another process re-pointed or deleted a row this store
/// never loaded), the parents whose children were read with that child in them are: each read
/// of a to-many records the children it found, until its parent is next notified.
///
/// Since every change of a parent's children notifies it, the children recorded are also what
/// a read finds until then: a second read of `list.rows` asks the database nothing while the
/// children's objects are alive. Children loaded ahead of a read (prefetched) are held until
/// that read.
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
    /// Children loaded ahead of a read of their parent's relationship, held until it. They are
    /// let go by moving them out first: an object that goes away calls back into ``forget(parentTable:key:)``,
    /// which must not find this dictionary in the middle of a change.
    private var prefetched: [Membership: [any TrackedModel]] = [:]
    /// The same, by child row: the memberships a child was read in (so that a change that does
    /// not tell the old parent finds it without a scan).
    private var readIn: [RowReference: Set<Membership>] = [:]
    /// The child tables that changed since ``forgetTouched()``: a transaction that fails tells
    /// their parents again, since undoing its changes is not heard otherwise.
    private(set) var touchedTables: Set<Int> = []
    /// Tells a parent's observers that its children changed: (parent table, key, relationship,
    /// where the change came from).
    private let notify: (Int, SQLValue, Int, ChangeOrigin) -> Void
    /// The keys of the parents of a table that the store holds objects for.
    private let parentKeys: (Int) -> [SQLValue]

    init(
        schemas: [TableSchema], tableOf: (ObjectIdentifier) -> Int?,
        notify: @escaping (Int, SQLValue, Int, ChangeOrigin) -> Void, parentKeys: @escaping (Int) -> [SQLValue]
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
    func didRead(parentTable: Int, relationship: Int, parentKey: SQLValue, children: [SQLValue], holding: [any TrackedModel] = []) {
        let membership = Membership(parentTable: parentTable, relationship: relationship, parentKey: parentKey)
        forgetRead(membership)
        guard let childTable = childTables[parentTable][relationship] else { return }
        childrenRead[membership] = children
        if !holding.isEmpty { prefetched[membership] = holding }
        for key in children { readIn[RowReference(table: childTable, key: key), default: []].insert(membership) }
    }

    /// The children a parent's to-many was last read with, if no change was told since, and
    /// the objects a prefetch held for this read: the caller keeps them alive while it finds
    /// the children's objects, and the store lets go of them.
    func recordedChildren(parentTable: Int, relationship: Int, parentKey: SQLValue) -> (keys: [SQLValue], held: [any TrackedModel])? {
        let membership = Membership(parentTable: parentTable, relationship: relationship, parentKey: parentKey)
        let held = prefetched.removeValue(forKey: membership) ?? []
        return childrenRead[membership].map { ($0, held) }
    }

    /// A child row's to-one column changed (or the row came or went): `old` and `new` give the
    /// key a link's column held before and holds now (`.null` for none; `old` nil when the
    /// change does not tell).
    func childChanged(
        table: Int, key: SQLValue, column: Int? = nil, old: (Int) -> SQLValue?, new: (Int) -> SQLValue, origin: ChangeOrigin = .local
    ) {
        for link in links[table] where column == nil || column == link.childColumn {
            touchedTables.insert(table)
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

    /// Every row of a table may have changed (a reset): every parent the store holds hears it.
    func childTableReset(table: Int, origin: ChangeOrigin = .local) {
        touchedTables.insert(table)
        for link in links[table] {
            for parent in parentKeys(link.parentTable) {
                tell(Membership(parentTable: link.parentTable, relationship: link.relationship, parentKey: parent), origin: origin)
            }
        }
    }

    func forgetTouched() {
        touchedTables.removeAll()
    }

    /// Forgets what a parent that went away was read with.
    func forget(parentTable: Int, key: SQLValue) {
        guard !childrenRead.isEmpty else { return }
        for relationship in childTables[parentTable].indices {
            forgetRead(Membership(parentTable: parentTable, relationship: relationship, parentKey: key))
        }
    }

    /// Forgets every record and lets go of every prefetched child: the store closed.
    func forgetAll() {
        childrenRead.removeAll()
        readIn.removeAll()
        let held = prefetched
        prefetched = [:]
        withExtendedLifetime(held) {}
    }

    private func forgetRead(_ membership: Membership) {
        let held = prefetched.removeValue(forKey: membership)
        defer { withExtendedLifetime(held) {} }
        guard let children = childrenRead.removeValue(forKey: membership),
              let childTable = childTables[membership.parentTable][membership.relationship]
        else { return }
        for key in children {
            let child = RowReference(table: childTable, key: key)
            readIn[child]?.remove(membership)
            if readIn[child]?.isEmpty == true { readIn[child] = nil }
        }
    }

    private func tell(_ membership: Membership, origin: ChangeOrigin) {
        forgetRead(membership)
        notify(membership.parentTable, membership.parentKey, membership.relationship, origin)
    }
}
