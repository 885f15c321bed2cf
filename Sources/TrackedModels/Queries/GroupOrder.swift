import Foundation

/// The groups a live form sorts rows into (the sections of ``SectionedResults``, the groups of
/// a ``LiveGroupedAggregate``), by their value as stored, in order: ascending as SQL's
/// `ORDER BY` sorts (NULL first, numbers, text by bytes), or the reverse.
///
/// ```swift
/// var groups = GroupOrder(ascending: true)
/// groups.insert(.text("b")); groups.insert(.null); groups.insert(.text("a"))
/// groups.values   // [NULL, 'a', 'b']
/// ```
struct GroupOrder {
    /// The groups, in order.
    private(set) var values: [SQLValue] = []
    private let ascending: Bool

    init(ascending: Bool) {
        self.ascending = ascending
    }

    /// A row's value at `column` as a fetch shows it: NULL for a key the database has yet to
    /// assign.
    static func value(of row: [SQLValue], column: Int) -> SQLValue {
        KeyPlaceholder.request(in: row[column]) == nil ? row[column] : .null
    }

    /// A row's group, for a key path of type `Key`: its value at `column` as `Key` stores it,
    /// so that the forms a column may hold of one key (a UUID's text in upper case, or its 16
    /// bytes; a Bool stored as 2) are one group. Texts are grouped by their Unicode scalars,
    /// as SQL groups them.
    static func group<Key: ColumnValue>(of row: [SQLValue], column: Int, as type: Key.Type) -> SQLValue {
        let stored = value(of: row, column: column)
        return (try? Key(sqlValue: stored))?.sqlValue ?? stored
    }

    /// A group's value as the key type of the key path that groups (a section key, a group of
    /// an aggregate).
    static func key<Key: ColumnValue>(_ value: SQLValue, as type: Key.Type, grouping model: @autoclosure () -> String) -> Key {
        guard let key = try? Key(sqlValue: value) else {
            preconditionFailure("the group \(value) of \(model()) does not decode as \(Key.self)")
        }
        return key
    }

    /// Where a group is, or would be inserted.
    private func position(of value: SQLValue) -> (index: Int, found: Bool) {
        var low = 0, high = values.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(values[middle], value) { low = middle + 1 } else { high = middle }
        }
        return (low, low < values.count && values[low] == value)
    }

    /// Adds a group that is not there; O(log g + g) for g groups.
    mutating func insert(_ value: SQLValue) {
        let (index, found) = position(of: value)
        precondition(!found, "group \(value) is already there")
        values.insert(value, at: index)
    }

    /// Removes a group that is there.
    mutating func remove(_ value: SQLValue) {
        let (index, found) = position(of: value)
        precondition(found, "group \(value) is not there")
        values.remove(at: index)
    }

    /// Replaces the groups with `groups`, in any order.
    mutating func replace(with groups: some Sequence<SQLValue>) {
        values = groups.sorted(by: precedes)
    }

    /// The order of groups: SQL's, and between values it holds the same but that differ (NULL
    /// and a NaN waiting to be refused, 1 and 1.0 in a column of no one type) by storage
    /// class, so that the order is total.
    private func precedes(_ a: SQLValue, _ b: SQLValue) -> Bool {
        let order = SQLValue.compare(a, b)
        guard order == .orderedSame else { return (order == .orderedAscending) == ascending }
        return (a.storageRank < b.storageRank) == ascending && a.storageRank != b.storageRank
    }
}

extension SQLValue {
    /// NULL, integer, real, text, blob: the order of SQLite's storage classes.
    fileprivate var storageRank: Int {
        switch self {
        case .null: 0
        case .integer: 1
        case .real: 2
        case .text: 3
        case .blob: 4
        }
    }
}
