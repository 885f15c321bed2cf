public import Observation

/// One section of ``SectionedResults``: the objects whose section key is ``key``, in the
/// descriptor's order, kept current row by row. An `Observable` `RandomAccessCollection`
/// whose observers hear a change of this section only: a row that enters, leaves or moves
/// within it, not a change of any other section.
///
/// ```swift
/// for section in sections {
///     print(section.key ?? "No list", section.count)
///     for row in section { print("  ", row.title) }
/// }
/// ```
///
/// A section that loses its last row leaves ``SectionedResults``; its observers hear it empty.
/// One whose key comes back later is another object.
public final class ResultsSection<Model: TrackedModel, SectionKey: ColumnValue & Hashable>: Observable, RandomAccessCollection, Identifiable {
    public typealias Element = Model
    public typealias Index = Int

    /// The value of the section key path that every row of the section has.
    public let key: SectionKey
    private var rows: SortedRows
    /// The edits of this burst.
    private var changes = ListChanges()
    private let objects: MemberObjects<Model>
    private let observation = ObservationRegistrar()
    /// Moves on with each published change of the section.
    private var revision = 0
    /// `\.revision`, made once (see ``FetchedResults``).
    private let revisionKeyPath: KeyPath<ResultsSection, Int>

    init(key: SectionKey, order: SortedRows.Order, objects: MemberObjects<Model>) {
        self.key = key
        self.objects = objects
        rows = SortedRows(order: order)
        revisionKeyPath = \ResultsSection.revision
    }

    /// The section's key: sections are told apart by it.
    public var id: SectionKey { key }

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        observation.access(self, keyPath: revisionKeyPath)
        return rows.count
    }

    public subscript(position: Int) -> Model {
        observation.access(self, keyPath: revisionKeyPath)
        precondition(position >= 0 && position < rows.count, "index \(position) is outside the \(rows.count) rows of section \(key)")
        return objects.object(for: rows[position].key)
    }

    /// The primary keys of the section's rows, in order: `nil` for a row whose key the database
    /// has yet to assign (see ``FetchedResults/keys``).
    public var keys: [Model.PrimaryKeyValue?] {
        observation.access(self, keyPath: revisionKeyPath)
        return allKeys.map { MemberObjects<Model>.typedKey($0) }
    }

    private var allKeys: [SQLValue] { rows.keys(in: 0..<rows.count) }

    // MARK: - Kept by the sectioned results

    /// Whether the section holds no row (it leaves the results once the burst is published).
    var holdsNoRow: Bool { rows.count == 0 }

    /// Removes `old` and inserts `new` (either may be nil), recording the change.
    func edit(removing old: SortedRows.Entry?, inserting new: SortedRows.Entry?) {
        if changes.isFull { changes.compareWhole(current: allKeys) }
        let removedAt = old.flatMap { rows.remove($0) }
        let insertedAt = new.map { rows.insert($0) }
        // A row whose sort values changed but whose place did not is no change of the section.
        guard removedAt != insertedAt else { return }
        if let old, let removedAt { changes.remove(key: old.key, at: removedAt) }
        if let new, let insertedAt { changes.insert(key: new.key, at: insertedAt) }
    }

    /// Takes rows already in order in place of what it held; recorded as a change unless the
    /// section is being made.
    func replace(withSorted entries: [SortedRows.Entry], isNew: Bool) {
        if !isNew { changes.compareWhole(current: allKeys) }
        rows.replace(withSorted: entries)
    }

    /// Tells observers the net change of the burst, if there is one.
    func publish() {
        changes.settle { allKeys }
        defer { changes = ListChanges() }
        guard !changes.isEmpty else { return }
        observation.withMutation(of: self, keyPath: revisionKeyPath) { revision += 1 }
    }

    /// Checks the order and count of the rows; for tests.
    func checkInvariants() {
        rows.checkInvariants()
    }
}
