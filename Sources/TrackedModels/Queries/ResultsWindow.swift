/// The part of a live list that its results show (``FetchedResults/fetchOffset`` and
/// ``FetchedResults/fetchLimit``), and how edits of the list and moves of the window become
/// the change its observers are told.
///
/// An edit at a position past the window's end changes nothing shown: it is not recorded, and
/// costs no more than keeping the list in order. The first edit of a burst that can change
/// what is shown keeps the window's keys as they were (in ``ListChanges``, as the list as it
/// was), to compare with the window once the burst ends. A move that is the burst's only
/// change is told from positions alone, in O(log n + rows entering and leaving).
///
/// ```swift
/// var window = ResultsWindow(offset: 0, limit: 20)
/// window.move(offset: 20, limit: 20, rows: rows, changes: &changes)
/// let told = window.takeChanges(changes) { rows }   // rows 0-19 out, 20-39 in
/// ```
///
/// Edits and the end of a burst take the rows as a closure, called only where they are read
/// (a window that is not the whole list, a burst compared whole): the rows are a live list's
/// own, and handing them over as a value would retain their storage at every change.
struct ResultsWindow {
    private(set) var offset: Int
    private(set) var limit: Int?
    /// The positions shown when observers were last told, while moves are the burst's only
    /// change.
    private var movedFrom: Range<Int>?
    /// Whether the window moved in this burst (observers of the window hear it, even where it
    /// shows the same rows).
    private var hasMoved = false

    init(offset: Int, limit: Int?) {
        self.offset = offset
        self.limit = limit
    }

    /// Whether the whole list is shown: its edits are recorded one by one.
    var isWhole: Bool { offset == 0 && limit == nil }

    /// The positions shown, of a list of `count` rows.
    func positions(of count: Int) -> Range<Int> {
        let start = Swift.min(offset, count)
        return start..<(start + Swift.min(limit ?? count, count - start))
    }

    /// Call before an edit that removes `old` from the rows and inserts `new`: where the edit
    /// can change what the window shows, what it showed is kept in `changes`.
    mutating func willEdit(removing old: SortedRows.Entry?, inserting new: SortedRows.Entry?, changes: inout ListChanges, rows: () -> SortedRows) {
        if movedFrom != nil { return keepShown(rows: rows(), changes: &changes) }
        if isWhole {
            if changes.isFull { keepShown(rows: rows(), changes: &changes) }
            return
        }
        guard !changes.isComparingWhole, limit != 0 else { return }
        // Rows before the end shift with an edit before it; those past it are not shown.
        let end = limit.map { offset.addingReportingOverflow($0).overflow ? Int.max : offset + $0 } ?? Int.max
        let rows = rows()
        let first = Swift.min(old.map(rows.rank) ?? Int.max, new.map(rows.rank) ?? Int.max)
        if first < end { keepShown(rows: rows, changes: &changes) }
    }

    /// Call before every row is replaced (a reset, a reload).
    mutating func willReplaceAll(rows: SortedRows, changes: inout ListChanges) {
        keepShown(rows: rows, changes: &changes)
    }

    /// Moves the window; what observers are told is the change from what they were last told.
    mutating func move(offset: Int, limit: Int?, rows: SortedRows, changes: inout ListChanges) {
        if changes.isEmpty {
            if movedFrom == nil { movedFrom = positions(of: rows.count) }
        } else {
            keepShown(rows: rows, changes: &changes)
        }
        self.offset = offset
        self.limit = limit
        hasMoved = true
    }

    /// Ends the burst: the change of what is shown, given the edits recorded in `changes`, and
    /// whether the window moved.
    mutating func takeChanges(_ changes: ListChanges, rows: () -> SortedRows) -> (changes: ListChanges, moved: Bool) {
        var told = changes
        if let before = movedFrom {
            let rows = rows()
            told = ListChanges(movingWindow: before, to: positions(of: rows.count), keys: rows.keys(in:))
        } else {
            told.settle {
                let rows = rows()
                return rows.keys(in: positions(of: rows.count))
            }
        }
        defer {
            movedFrom = nil
            hasMoved = false
        }
        return (told, hasMoved)
    }

    /// Keeps the keys observers were last told the window shows, as the list as it was.
    private mutating func keepShown(rows: SortedRows, changes: inout ListChanges) {
        let shown = movedFrom ?? positions(of: rows.count)
        movedFrom = nil
        changes.compareWhole(current: rows.keys(in: shown))
    }
}
