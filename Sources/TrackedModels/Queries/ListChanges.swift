/// The net change of a list over a burst of edits, as a `CollectionDifference`: removals at
/// their offsets in the list as it was, insertions at their offsets in the list as it is.
///
/// Each edit is one row removed from or inserted at a position of the current list; the
/// offsets are translated as they come, in O(edits) each, so a burst costs nothing in the size
/// of the list (unless a reset replaces it whole).
///
/// ```swift
/// var changes = ListChanges()
/// changes.remove(key: 42, at: 7)     // row 42 moves from 7 ...
/// changes.insert(key: 42, at: 0)     // ... to the top
/// changes.difference { $0 }           // remove offset 7, insert offset 0
/// ```
struct ListChanges {
    /// Rows of the original list that are gone, by original offset, ascending.
    private var removed: [(offset: Int, key: SQLValue)] = []
    /// Rows that are new in the current list, by current offset, ascending.
    private var inserted: [(offset: Int, key: SQLValue)] = []

    var isEmpty: Bool { removed.isEmpty && inserted.isEmpty }

    mutating func remove(key: SQLValue, at position: Int) {
        if let index = inserted.firstIndex(where: { $0.offset == position }) {
            // Inserted during this burst: as if it had never been.
            inserted.remove(at: index)
        } else {
            // The position among the original rows still present, then among all of them.
            var original = position - inserted.count { $0.offset < position }
            for row in removed {
                guard row.offset <= original else { break }
                original += 1
            }
            let index = removed.firstIndex { $0.offset > original } ?? removed.count
            removed.insert((original, key), at: index)
        }
        for index in inserted.indices where inserted[index].offset > position {
            inserted[index].offset -= 1
        }
    }

    mutating func insert(key: SQLValue, at position: Int) {
        for index in inserted.indices where inserted[index].offset >= position {
            inserted[index].offset += 1
        }
        let index = inserted.firstIndex { $0.offset > position } ?? inserted.count
        inserted.insert((position, key), at: index)
    }

    /// Records that the list went from `before` (its contents when this was called) to
    /// `after` at once, as after a reset.
    mutating func replaceAll(before: [SQLValue], after: [SQLValue]) {
        var original = before
        for row in inserted.reversed() { original.remove(at: row.offset) }
        for row in removed { original.insert(row.key, at: row.offset) }
        let difference = after.difference(from: original)
        removed = difference.removals.compactMap { change in
            if case .remove(let offset, let key, _) = change { (offset, key) } else { nil }
        }
        inserted = difference.insertions.compactMap { change in
            if case .insert(let offset, let key, _) = change { (offset, key) } else { nil }
        }
    }

    /// The difference with keys converted by `element`; a key both removed and inserted is a
    /// move, its two changes associated with each other.
    func difference<Element>(_ element: (SQLValue) -> Element) -> CollectionDifference<Element> {
        // A burst is mostly one row moved: a few changes are matched by a scan, many by hashing.
        let isShort = removed.count < 8 && inserted.count < 8
        var insertedAt: [SQLValue: Int] = [:]
        var removedAt: [SQLValue: Int] = [:]
        if !isShort {
            for row in inserted { insertedAt[row.key] = row.offset }
            for row in removed { removedAt[row.key] = row.offset }
        }
        var changes: [CollectionDifference<Element>.Change] = []
        changes.reserveCapacity(removed.count + inserted.count)
        for row in removed {
            let partner = isShort ? inserted.first { $0.key == row.key }?.offset : insertedAt[row.key]
            changes.append(.remove(offset: row.offset, element: element(row.key), associatedWith: partner))
        }
        for row in inserted {
            let partner = isShort ? removed.first { $0.key == row.key }?.offset : removedAt[row.key]
            changes.append(.insert(offset: row.offset, element: element(row.key), associatedWith: partner))
        }
        guard let difference = CollectionDifference(changes) else {
            preconditionFailure("the recorded list edits do not form a difference")
        }
        return difference
    }
}
