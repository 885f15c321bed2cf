import Foundation

/// The stand-in for a key the database has yet to assign to one of the store's inserts: a
/// to-one column that points at such an object is written with it, and the worker puts the
/// assigned key in its place inside the commit that writes both rows, so that no follow-up
/// write exists and the file never holds a link the program set but the commit left NULL.
///
/// It is a BLOB that no key the database assigns can equal (those are integers), and it is
/// recognized only in to-one columns (``TableSchema/relationshipColumns``), whose values are
/// keys, or as the row of a change (a new object's temporary identity: a change made to it
/// while its insert is in flight changes the row by its key's placeholder), so no program value
/// is ever taken for one. It lives in writes only: objects, events and reads show NULL until
/// the insert commits.
///
/// For example, a child of a new list, inserted in one flush:
///
/// ```
/// insert into lists:  id = <assigned>, title = 'Groceries'            → key 7
/// insert into rows:   id = 1, list_id = <placeholder of the list>     → list_id = 7
/// ```
enum KeyPlaceholder {
    private static let mark: [UInt8] = Array("\u{0}TMkey\u{0}".utf8)

    /// The placeholder of the key the database assigns to an insert request.
    static func value(forInsert request: UInt64) -> SQLValue {
        var bytes = mark
        withUnsafeBytes(of: request.bigEndian) { bytes += $0 }
        return .blob(Data(bytes))
    }

    /// The insert request a placeholder stands for; nil for any other value.
    static func request(in value: SQLValue) -> UInt64? {
        guard case .blob(let data) = value, data.count == mark.count + 8, data.starts(with: mark) else { return nil }
        return data.suffix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A to-one column written with a placeholder whose insert comes later in the same
/// transaction (objects that point at each other, or an object at itself): the engine writes
/// NULL first and the key once that insert has it.
struct DeferredLink {
    var table: Int
    /// The row that holds the link: its key, or the insert request that is assigning it.
    var row: RowKey
    var column: Int
    /// The insert whose key the column takes.
    var request: UInt64

    enum RowKey: Hashable {
        case key(SQLValue)
        case insert(UInt64)
    }

    /// The cell the link is written to.
    struct Cell: Hashable {
        var table: Int
        var row: RowKey
        var column: Int
    }

    var cell: Cell { Cell(table: table, row: row, column: column) }
}

/// A link whose placeholder a commit replaced by the key it assigned.
struct ResolvedLink {
    var link: DeferredLink
    var key: SQLValue
    /// Whether the link is committed (the row holds the key at the end of the commit); else a
    /// write still to commit holds it.
    var isCommitted: Bool
}

extension WriteOperation {
    /// The row that holds the operation's cells, for a ``DeferredLink``: by its key, or by the
    /// insert that is to give it one (also for a change made by the key's placeholder).
    private var linkRow: DeferredLink.RowKey? {
        switch self {
        case .insert(let request): request.row.map { .key($0.key) } ?? .insert(request.id)
        case .update(let row, _): KeyPlaceholder.request(in: row.key).map { .insert($0) } ?? .key(row.key)
        case .delete, .deleteAll: nil
        }
    }

    /// Replaces each value written to a to-one column for which `replacement` gives a new
    /// value and the insert the link is to; returns the links it replaced.
    ///
    /// - Parameter linkColumns: Each table's to-one columns.
    private mutating func replaceLinks(linkColumns: [[Int]], _ replacement: (_ column: Int, _ value: SQLValue) -> (new: SQLValue, request: UInt64)?) -> [DeferredLink] {
        guard !linkColumns[table].isEmpty, let row = linkRow else { return [] }
        var replaced: [DeferredLink] = []
        switch self {
        case .insert(var request):
            for column in linkColumns[request.table] {
                guard let (new, insert) = replacement(column, request.values[column]) else { continue }
                request.values[column] = new
                replaced.append(DeferredLink(table: request.table, row: row, column: column, request: insert))
            }
            if !replaced.isEmpty { self = .insert(request) }
        case .update(let updated, var cells):
            for index in cells.indices where linkColumns[updated.table].contains(cells[index].column) {
                guard case .set(let old) = cells[index].write, let (new, insert) = replacement(cells[index].column, old) else { continue }
                cells[index].write = .set(new)
                replaced.append(DeferredLink(table: updated.table, row: row, column: cells[index].column, request: insert))
            }
            if !replaced.isEmpty { self = .update(row: updated, cells: cells) }
        case .delete, .deleteAll:
            break
        }
        return replaced
    }

    /// Replaces each placeholder in a to-one column for which `value` gives a value; returns
    /// the links it replaced, each with its insert request.
    private mutating func replacePlaceholders(linkColumns: [[Int]], _ value: (UInt64) -> SQLValue?) -> [DeferredLink] {
        replaceLinks(linkColumns: linkColumns) { _, old in
            guard let placeholder = KeyPlaceholder.request(in: old), let new = value(placeholder) else { return nil }
            return (new, placeholder)
        }
    }

    /// The operation as the engine runs it: each placeholder replaced by the key `key` gives
    /// for its insert, or by NULL, with the link returned to write once that insert has its
    /// key (in the same transaction, or never: an insert discarded leaves NULL); and each link
    /// to a row that `later` inserts after this operation written NULL, returned to write once
    /// that row is in.
    func resolvingPlaceholders(linkColumns: [[Int]], later: KeyedInserts, at position: Int, _ key: (UInt64) -> SQLValue?) -> (WriteOperation, deferred: [DeferredLink]) {
        var operation = self
        var deferred: [DeferredLink] = []
        // A change of a row whose insert was in flight when it was made: its insert committed
        // in an earlier transaction (or this one), or was discarded, and then there is no row.
        _ = operation.replaceRowPlaceholder { key($0) ?? .null }
        let replaced = operation.replacePlaceholders(linkColumns: linkColumns) { request in
            key(request) ?? .null
        }
        for link in replaced where key(link.request) == nil { deferred.append(link) }
        if !later.isEmpty {
            let table = operation.table
            deferred += operation.replaceLinks(linkColumns: linkColumns) { column, value in
                later.insert(table: table, column: column, key: value, after: position).map { (.null, $0) }
            }
        }
        return (operation, deferred)
    }

    /// Puts the keys `keys` holds in place of their placeholders, in to-one columns and as the
    /// row an update or delete changes; returns the links that took one, with the key.
    ///
    /// - Parameter rekeyed: Set when the operation's row took its key.
    mutating func resolvePlaceholders(_ keys: [UInt64: SQLValue], linkColumns: [[Int]], rekeyed: inout Bool) -> [(link: DeferredLink, key: SQLValue)] {
        guard !keys.isEmpty else { return [] }
        if replaceRowPlaceholder({ keys[$0] }) { rekeyed = true }
        return replacePlaceholders(linkColumns: linkColumns) { keys[$0] }.map { ($0, keys[$0.request]!) }
    }

    /// Replaces the placeholder an update or delete has for its row's key (a change made to an
    /// object while its insert was in flight), where `value` gives one; whether it did.
    mutating func replaceRowPlaceholder(_ value: (UInt64) -> SQLValue?) -> Bool {
        switch self {
        case .update(let row, let cells):
            guard let request = KeyPlaceholder.request(in: row.key), let key = value(request) else { return false }
            self = .update(row: RowReference(table: row.table, key: key), cells: cells)
        case .delete(let row):
            guard let request = KeyPlaceholder.request(in: row.key), let key = value(request) else { return false }
            self = .delete(row: RowReference(table: row.table, key: key))
        case .insert, .deleteAll:
            return false
        }
        return true
    }

    /// The insert requests whose placeholders the operation holds: in to-one columns, and as
    /// its row's key.
    func placeholderRequests(linkColumns: [[Int]]) -> [UInt64] {
        var requests: [UInt64] = row.flatMap { KeyPlaceholder.request(in: $0.key) }.map { [$0] } ?? []
        var copy = self
        _ = copy.replacePlaceholders(linkColumns: linkColumns) { request in
            requests.append(request)
            return nil
        }
        return requests
    }
}

extension WriteUnit {
    /// Whether the unit holds the placeholder of a key that an insert of `other` is to be
    /// given (a link to its row, or a change of it): it cannot commit without `other`,
    /// whichever comes first.
    func references(insertsOf other: WriteUnit, linkColumns: [[Int]]) -> Bool {
        let inserted = Set(other.operations.compactMap { operation -> UInt64? in
            if case .insert(let request) = operation, request.row == nil { request.id } else { nil }
        })
        guard !inserted.isEmpty else { return false }
        return operations.contains { $0.placeholderRequests(linkColumns: linkColumns).contains(where: inserted.contains) }
    }

    /// Whether the unit inserts a row whose key the database assigns.
    var insertsWithoutKey: Bool {
        operations.contains { if case .insert(let request) = $0 { request.row == nil } else { false } }
    }
}
