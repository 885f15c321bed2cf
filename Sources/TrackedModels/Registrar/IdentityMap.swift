/// One object per row, held weakly, as Core Data's context does: a clean object the program
/// dropped goes away, and its entry with it. An object with changes not yet committed stays
/// alive because its pending unit holds it (see `PendingChanges.Unit.objects`).
struct IdentityMap {
    private struct Entry {
        weak var object: (any TrackedModel)?
    }

    private var tables: [[SQLValue: Entry]]

    init(tableCount: Int) {
        tables = Array(repeating: [:], count: tableCount)
    }

    func object(table: Int, key: SQLValue) -> (any TrackedModel)? {
        tables[table][key]?.object
    }

    mutating func insert(_ object: any TrackedModel, table: Int, key: SQLValue) {
        tables[table][key] = Entry(object: object)
    }

    @discardableResult
    mutating func remove(table: Int, key: SQLValue) -> (any TrackedModel)? {
        tables[table].removeValue(forKey: key)?.object
    }

    /// Forgets a row whose object went away (and not a newer object of the same row).
    ///
    /// A dictionary keeps its capacity when entries go, so a map that held a million objects
    /// would keep their buckets: once a table's map is down to an eighth of its capacity, it is
    /// copied into a smaller one (amortized O(1) per removal).
    mutating func removeIfGone(table: Int, key: SQLValue) {
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

    /// Entries, live or not yet forgotten, for tests and diagnostics.
    var count: Int { tables.reduce(0) { $0 + $1.count } }

    /// Forgets every row of a table, returning its live objects.
    mutating func removeAll(table: Int) -> [(key: SQLValue, object: any TrackedModel)] {
        defer { tables[table].removeAll() }
        return objects(table: table)
    }
}
