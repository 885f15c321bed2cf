/// One object per row, held weakly, as Core Data's context does: a clean object the program
/// dropped goes away, and its entry with it. An object with changes not yet committed stays
/// alive because its pending unit holds it (see `PendingChanges.Unit.objects`).
///
/// It also holds the objects whose insert waits for the database to assign their key, by
/// insert request (their temporary identity), strongly: until the key arrives, nothing else
/// finds them. It is changed only through the registrar (attaching, detaching, keys arriving);
/// relationships and reads look objects up in it.
final class IdentityMap {
    private struct Entry {
        weak var object: (any TrackedModel)?
    }

    /// An object whose insert waits for its key, and its table.
    typealias Unkeyed = (object: any TrackedModel, table: Int)

    private var tables: [[SQLValue: Entry]]
    /// The objects whose insert waits for the database to assign their key, by insert request.
    private(set) var unkeyed: [UInt64: Unkeyed] = [:]

    init(tableCount: Int) {
        tables = Array(repeating: [:], count: tableCount)
    }

    /// The object of a row by its key (not by a key's placeholder: see ``object(table:shownAs:)``).
    func object(table: Int, key: SQLValue) -> (any TrackedModel)? {
        tables[table][key]?.object
    }

    /// The object of a row by the key reads name it by: its key, or, for an insert whose key
    /// the database has yet to assign, its key's placeholder (its temporary identity).
    func object(table: Int, shownAs key: SQLValue) -> (any TrackedModel)? {
        if let object = tables[table][key]?.object { return object }
        return KeyPlaceholder.request(in: key).flatMap { unkeyedObject(table: table, request: $0) }
    }

    func insert(_ object: any TrackedModel, table: Int, key: SQLValue) {
        tables[table][key] = Entry(object: object)
    }

    @discardableResult
    func remove(table: Int, key: SQLValue) -> (any TrackedModel)? {
        tables[table].removeValue(forKey: key)?.object
    }

    /// Forgets a row whose object went away (and not a newer object of the same row).
    ///
    /// A dictionary keeps its capacity when entries go, so a map that held a million objects
    /// would keep their buckets: once a table's map is down to an eighth of its capacity, it is
    /// copied into a smaller one (amortized O(1) per removal).
    func removeIfGone(table: Int, key: SQLValue) {
        guard table < tables.count, let entry = tables[table][key], entry.object == nil else { return }
        tables[table].removeValue(forKey: key)
        if tables[table].capacity > 1_024, tables[table].count < tables[table].capacity / 8 {
            tables[table] = Dictionary(uniqueKeysWithValues: tables[table].lazy.map { ($0.key, $0.value) })
        }
    }

    /// The live objects of a table, by key.
    func objects(table: Int) -> [(key: SQLValue, object: any TrackedModel)] {
        tables[table].compactMap { key, entry in entry.object.map { (key, $0) } }
    }

    /// Keyed entries, live or not yet forgotten (not the inserts waiting for their key), for
    /// tests and diagnostics.
    var count: Int { tables.reduce(0) { $0 + $1.count } }

    /// Forgets every row of a table, returning its live objects.
    func removeAll(table: Int) -> [(key: SQLValue, object: any TrackedModel)] {
        defer { tables[table].removeAll() }
        return objects(table: table)
    }

    // MARK: - Inserts waiting for their key

    /// Whether some insert waits for the database to assign its key.
    var hasUnkeyed: Bool { !unkeyed.isEmpty }

    /// The object of an insert of the table whose key the database has yet to assign (or has
    /// just assigned, before the object learns it), by the insert's request.
    func unkeyedObject(table: Int, request: UInt64) -> (any TrackedModel)? {
        unkeyed[request].flatMap { $0.table == table ? $0.object : nil }
    }

    /// The objects of a table's inserts that wait for their key, in the order they were inserted.
    func unkeyedObjects(table: Int) -> [(request: UInt64, object: any TrackedModel)] {
        guard hasUnkeyed else { return [] }
        return unkeyed.filter { $0.value.table == table }.sorted { $0.key < $1.key }.map { ($0.key, $0.value.object) }
    }

    func insertUnkeyed(_ object: any TrackedModel, table: Int, request: UInt64) {
        unkeyed[request] = (object, table)
    }

    @discardableResult
    func removeUnkeyed(request: UInt64) -> Unkeyed? {
        unkeyed.removeValue(forKey: request)
    }

    /// Forgets every insert of a table that waits for its key, returning them.
    func removeAllUnkeyed(table: Int) -> [(request: UInt64, entry: Unkeyed)] {
        let removed = unkeyed.filter { $0.value.table == table }.sorted { $0.key < $1.key }
        for (request, _) in removed { unkeyed[request] = nil }
        return removed.map { ($0.key, $0.value) }
    }

    /// Forgets every insert that waits for its key, returning their objects.
    func removeAllUnkeyed() -> [any TrackedModel] {
        defer { unkeyed.removeAll() }
        return unkeyed.values.map(\.object)
    }
}
