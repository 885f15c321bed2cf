public import Observation

/// The objects a ``FetchDescriptor`` matches, in order, kept current row by row: an
/// `Observable` `RandomAccessCollection`, like SwiftData's `@Query` results, that is never
/// re-fetched.
///
/// ```swift
/// let busy = try store.results(for: FetchDescriptor<Row>(
///     predicate: #Predicate { $0.count > 0 },
///     sortBy: [SortDescriptor(\.count, order: .reverse)]
/// ))
/// let subscription = busy.onChange { change in
///     tableView.apply(change.removedOffsets, change.insertedOffsets)
/// }
/// for row in busy { print(row.title, row.count) }
/// ```
///
/// A change to a column the predicate or a sort descriptor reads re-evaluates that one row (it
/// enters, leaves or moves, in O(log n)); a change to any other column costs nothing and wakes
/// no observer of the list. The same holds for inserts, deletes, transactions (one update at
/// their end), other processes' commits and resets. Observers of the list (Observation,
/// ``onChange(_:)``, ``differences``) hear of a change only when the membership or order of
/// the window (``FetchDescriptor/fetchOffset``, ``FetchDescriptor/fetchLimit``) changes.
///
/// A list that reads what a to-one relationship points at (`$0.list?.title`, or a sort by
/// `\Row.list?.title`) follows a change of that target, here or by another process, by
/// re-evaluating the rows that point at it and no others (one read of them, through an index
/// on the relationship's column where the table has one; a transaction that changes many
/// targets reads the rows pointing at them together).
///
/// Reading an element's properties registers those cells only, as with any object. The
/// results belong to the store's actor; they end with the store.
///
/// > Warning: The results keep the objects they handed out, and read the others when they are
/// > first accessed. An element whose row another process has just deleted, read before the
/// > store hears of the delete (within ``ModelStore/Configuration/externalChangePollInterval``)
/// > and never read before, cannot be made into an object: reading it traps. Call
/// > ``ModelStore/refreshExternalChanges()`` first where that can happen.
public final class FetchedResults<Model: TrackedModel>: Observable, RandomAccessCollection, LiveQueryForm {
    public typealias Element = Model
    public typealias Index = Int
    /// A change of ``keys``, as ``Change/difference`` makes it: a row whose key the database
    /// has yet to assign is `nil` until it has its key (then it is removed as `nil` and
    /// inserted with its key).
    public typealias Difference = CollectionDifference<Model.PrimaryKeyValue?>

    private let plan: CompiledQuery
    /// Follows the rows' changes, and tells this list of each (see ``LiveQueryForm``).
    private let live: LiveQuery<FetchedResults>
    private var rows: SortedRows
    /// How each member sorts, by key.
    private var members: [SQLValue: SortedRows.Entry] = [:]
    /// Objects handed out, kept while their row is a member.
    private let objects: MemberObjects<Model>
    private let observation = ObservationRegistrar()
    /// Moves on with each published change; what observers of the list depend on.
    private var revision = 0
    /// `\.revision`, made once: a key path into a generic class is instantiated at run time,
    /// which would otherwise cost every read and every change.
    private let revisionKeyPath: KeyPath<FetchedResults, Int>
    private var changes = ListChanges()
    /// The part of the rows shown, and what observers were last told it shows.
    private var window: ResultsWindow
    /// Whether observers are being told a change: a window moved meanwhile (by an observer)
    /// moves once every observer has been told, so that each hears the same change.
    private var isPublishing = false
    private var moveAfterPublishing: (offset: Int, limit: Int?)?
    /// Who hears the list's changes (see ``onChange(_:)``, in `FetchedResults+Subscription`).
    let observers = ChangeObservers()

    /// Results of a plan, starting from the rows it matches now (``MatchingRows``, not
    /// windowed).
    init(store: ModelStore, plan: CompiledQuery, matching: [[SQLValue]]) {
        self.plan = plan
        revisionKeyPath = \FetchedResults.revision
        rows = SortedRows(order: plan.entryOrder)
        objects = MemberObjects(store: store, plan: plan, describedAs: "a live list of \(Model.self)")
        window = ResultsWindow(offset: plan.offset, limit: plan.limit)
        live = LiveQuery(store: store, plan: plan, describedAs: "a live list of \(Model.self)")
        load(matching)
        live.start(form: self)
    }

    // MARK: - Collection

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        observation.access(self, keyPath: revisionKeyPath)
        return windowCount
    }

    public subscript(position: Int) -> Model {
        observation.access(self, keyPath: revisionKeyPath)
        precondition(position >= 0 && position < windowCount, "index \(position) is outside the \(windowCount) results")
        return objects.object(for: rows[window.offset + position].key)
    }

    /// The primary keys of the results, in order: `nil` for a row inserted whose key the
    /// database has yet to assign (it sorts after every key, in the order of the inserts).
    ///
    /// ```swift
    /// try store.insert(Note(id: nil, title: "Draft"))
    /// notes.keys   // [1, 2, nil]
    /// ```
    public var keys: [Model.PrimaryKeyValue?] {
        observation.access(self, keyPath: revisionKeyPath)
        return windowKeys().map { MemberObjects<Model>.typedKey($0) }
    }

    private var windowCount: Int { window.positions(of: rows.count).count }

    private func windowKeys() -> [SQLValue] {
        rows.keys(in: window.positions(of: rows.count))
    }

    // MARK: - Moving the window

    /// How many matching rows the results skip: the descriptor's
    /// ``FetchDescriptor/fetchOffset`` (0 for none), until ``moveWindow(offset:limit:)``.
    public var fetchOffset: Int {
        observation.access(self, keyPath: revisionKeyPath)
        return window.offset
    }

    /// The most rows the results show: the descriptor's ``FetchDescriptor/fetchLimit`` (nil
    /// for all), until ``moveWindow(offset:limit:)``.
    public var fetchLimit: Int? {
        observation.access(self, keyPath: revisionKeyPath)
        return window.limit
    }

    /// Shows another part of the matching rows: the rows from `offset`, at most `limit` of
    /// them (nil for all), for paging and infinite scroll. The results keep every matching
    /// row current, so a move reads nothing: it costs O(log n + rows entering and leaving).
    /// The results show the new window at once; observers hear the move as the rows that left
    /// and entered (Observation hears every move) at once too, or, where it is made inside a
    /// transaction or while a change is delivered, together with that change when it ends. A
    /// move made by an observer while it is told a change is made once every observer has
    /// been told that one. Changes past the window's end cost nothing more than keeping the
    /// rows in order, and wake no observer.
    ///
    /// ```swift
    /// let page = try store.results(for: descriptor)      // fetchLimit 20
    /// try page.moveWindow(offset: 20, limit: 20)          // the second page
    /// try page.moveWindow(offset: 0, limit: 60)           // scrolled: three pages
    /// ```
    ///
    /// - Throws: ``StoreError/Code/unsupportedPredicate`` for a negative offset or limit,
    ///   naming it; the window stays where it was.
    public func moveWindow(offset: Int, limit: Int?) throws {
        try CompiledQuery.checkWindow(offset: offset, limit: limit)
        guard !isPublishing else { return moveAfterPublishing = (offset, limit) }
        guard offset != window.offset || limit != window.limit else { return }
        window.move(offset: offset, limit: limit, rows: rows, changes: &changes)
        live.formChanged()
    }

    // MARK: - Keeping current

    /// Takes the matching rows: at creation, and after a reset.
    private func load(_ matching: [[SQLValue]]) {
        members.removeAll(keepingCapacity: true)
        let entries = matching.map { values in
            let entry = plan.entry(of: values)
            members[entry.key] = entry
            objects.keep(entry.key, values: values)
            return entry
        }
        rows.replace(withSorted: entries)
        objects.keepOnly { members[$0] != nil }
    }

    /// Whether a read placed later failed, so that what the list holds may be out of date
    /// until its next change (see ``LiveQuery/isStale``).
    var isStale: Bool { live.isStale }

    // MARK: - Told by the live query

    func place(_ key: SQLValue, values: [SQLValue]?) {
        if let values { objects.keep(key, values: values) }
        place(key, as: values.map(plan.entry))
    }

    func replaceAll(with matching: [[SQLValue]]) {
        window.willReplaceAll(rows: rows, changes: &changes)
        load(matching)
    }

    /// Moves a row to where its entry says, or out of the list for nil.
    private func place(_ key: SQLValue, as new: SortedRows.Entry?) {
        // One hash of the key: `members` is large, and each lookup a likely cache miss.
        let member = members.index(forKey: key)
        let old = member.map { members.values[$0] }
        guard old != new else { return }
        window.willEdit(removing: old, inserting: new, changes: &changes) { rows }
        let removedAt = old.flatMap { rows.remove($0) }
        let insertedAt = new.map { rows.insert($0) }
        members.setValue(new, forKey: key, foundAt: member)
        if new == nil { objects.forget(key) }
        // A row whose sort values changed but whose place did not is no change of the list.
        guard removedAt != insertedAt, window.isWhole else { return }
        if let removedAt { changes.remove(key: key, at: removedAt) }
        if let insertedAt { changes.insert(key: key, at: insertedAt) }
    }

    /// Tells observers the net change of the burst, if the window moved or what it shows
    /// changed at all.
    func publish() {
        let (recorded, moved) = window.takeChanges(changes) { rows }
        changes = ListChanges()
        guard moved || !recorded.isEmpty else { return }
        isPublishing = true
        observation.withMutation(of: self, keyPath: revisionKeyPath) { revision += 1 }
        // Made only for those who take it, of the stored keys, which tell rows waiting for
        // their keys apart (their typed keys are all nil) where it pairs a move.
        if !observers.isEmpty, !recorded.isEmpty { observers.send(recorded) }
        isPublishing = false
        if let move = moveAfterPublishing {
            moveAfterPublishing = nil
            try? moveWindow(offset: move.offset, limit: move.limit)
        }
    }

    /// Whether the results keep an object for a row (a member read since it joined); for tests.
    func holdsObject(ofKey key: SQLValue) -> Bool { objects.holds(key) }

    /// Checks the order and counts of the rows; for tests.
    func checkInvariants() {
        rows.checkInvariants()
        precondition(rows.count == members.count, "members and rows disagree")
    }
}
