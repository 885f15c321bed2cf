/// The net change of a list over a burst of edits: removals at their offsets in the list as it
/// was, insertions at their offsets in the list as it is.
///
/// Each edit is one row removed from or inserted at a position of the current list; the
/// offsets are translated as they come, in O(edits) each, so a short burst costs nothing in
/// the size of the list. Past ``maximumEdits`` (a transaction that inserts thousands of rows,
/// say), or after a reset, the burst keeps the list as it was instead and compares it with the
/// list as it is once the burst ends, in O(n log n).
///
/// ```swift
/// var changes = ListChanges()
/// changes.remove(key: 42, at: 7)     // row 42 moves from 7 ...
/// changes.insert(key: 42, at: 0)     // ... to the top
/// (changes.removed, changes.inserted) // [(7, 42)], [(0, 42)]
/// ```
struct ListChanges {
    /// The most edits translated one by one in a burst.
    static let maximumEdits = 64

    /// Rows of the original list that are gone, by original offset, ascending.
    private(set) var removed: [(offset: Int, key: SQLValue)] = []
    /// Rows that are new in the current list, by current offset, ascending.
    private(set) var inserted: [(offset: Int, key: SQLValue)] = []
    /// The list as it was before the burst, once edits are no longer translated one by one.
    private var original: [SQLValue]?

    init() {}

    /// A window's move over a list that did not change: the rows shown at `before` but not at
    /// `after` are removed, those shown at `after` but not at `before` inserted; the rows
    /// shown at both keep their order. O(rows entering and leaving), each key read by `keys`.
    init(movingWindow before: Range<Int>, to after: Range<Int>, keys: (Range<Int>) -> [SQLValue]) {
        func changes(shownAt shown: Range<Int>, notAt other: Range<Int>) -> [(offset: Int, key: SQLValue)] {
            let left = shown.lowerBound..<Swift.max(shown.lowerBound, Swift.min(shown.upperBound, other.lowerBound))
            let right = Swift.min(shown.upperBound, Swift.max(shown.lowerBound, other.upperBound))..<shown.upperBound
            return [left, right].flatMap { range in
                zip(range, keys(range)).map { (offset: $0 - shown.lowerBound, key: $1) }
            }
        }
        removed = changes(shownAt: before, notAt: after)
        inserted = changes(shownAt: after, notAt: before)
    }

    /// Whether the burst leaves the list as it was: no edits, or only rows removed and inserted
    /// again where they were (each row at the same offset before and after, the others in
    /// their order, is the same list).
    var isEmpty: Bool {
        original == nil && removed.count == inserted.count
            && zip(removed, inserted).allSatisfy { $0.offset == $1.offset && $0.key == $1.key }
    }

    /// Whether the burst keeps the list as it was, to compare with the list as it is when the
    /// burst ends (``compareWhole(current:)``).
    var isComparingWhole: Bool { original != nil }

    /// Whether the burst has made as many edits as are translated one by one: the caller hands
    /// over the list as it is (``compareWhole(current:)``) before the next edit.
    var isFull: Bool { original == nil && removed.count + inserted.count >= Self.maximumEdits }

    mutating func remove(key: SQLValue, at position: Int) {
        guard original == nil else { return }
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
        guard original == nil else { return }
        for index in inserted.indices where inserted[index].offset >= position {
            inserted[index].offset += 1
        }
        let index = inserted.firstIndex { $0.offset > position } ?? inserted.count
        inserted.insert((position, key), at: index)
    }

    /// From now on the burst's change is the list as it was against the list as it is when the
    /// burst ends (``settle(current:)``), whatever edits follow; `current` is the list now,
    /// the edits recorded so far included. Called before a reset replaces the list, or when
    /// the burst is ``isFull``.
    mutating func compareWhole(current: [SQLValue]) {
        guard original == nil else { return }
        var list = current
        for row in inserted.reversed() { list.remove(at: row.offset) }
        for row in removed { list.insert(row.key, at: row.offset) }
        original = list
        removed = []
        inserted = []
    }

    /// Ends the burst: where it kept the list as it was, its edits are the comparison with
    /// `current()`, the list as it is.
    mutating func settle(current: () -> [SQLValue]) {
        guard let before = original else { return }
        original = nil
        (removed, inserted) = Self.edits(from: before, to: current())
    }

    /// The edits that take `before` to `after` (each a list of distinct keys): a row in one
    /// only is removed or inserted; of the rows in both, the longest run that keeps its order
    /// stays, and the others move (each removed and inserted). O(n log n).
    private static func edits(from before: [SQLValue], to after: [SQLValue]) -> (removed: [(offset: Int, key: SQLValue)], inserted: [(offset: Int, key: SQLValue)]) {
        var offsetBefore: [SQLValue: Int] = [:]
        offsetBefore.reserveCapacity(before.count)
        for (offset, key) in before.enumerated() { offsetBefore[key] = offset }
        // The rows in both, in the order they have after, by their offsets before and after.
        let common = after.indices.compactMap { offset in offsetBefore[after[offset]].map { (before: $0, after: offset) } }
        var staysBefore = [Bool](repeating: false, count: before.count)
        var staysAfter = [Bool](repeating: false, count: after.count)
        for index in longestIncreasingRun(common.map(\.before)) {
            staysBefore[common[index].before] = true
            staysAfter[common[index].after] = true
        }
        return (
            before.indices.filter { !staysBefore[$0] }.map { ($0, before[$0]) },
            after.indices.filter { !staysAfter[$0] }.map { ($0, after[$0]) }
        )
    }

    /// The positions of a longest increasing subsequence of `values` (patience sorting).
    private static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        // tails[length - 1]: the position of the smallest last value of a run of that length.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run: [Int] = []
        var position = tails.last ?? -1
        while position >= 0 {
            run.append(position)
            position = previous[position]
        }
        return run.reversed()
    }
}
