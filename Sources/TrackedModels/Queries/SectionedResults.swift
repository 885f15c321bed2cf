public import Observation

/// The objects a ``FetchDescriptor`` matches, in sections by the value of a key path (a column,
/// or a column of what a to-one relationship points at: `\.list?.title`), kept current row by
/// row: an `Observable` `RandomAccessCollection` of ``ResultsSection``s, sections in key order,
/// each section's rows in the descriptor's order. Never re-fetched.
///
/// ```swift
/// let sections = try store.results(for: FetchDescriptor<Row>(sortBy: [SortDescriptor(\.title)]), sectionedBy: \.list?.title)
/// List(sections) { section in
///     Section(section.key ?? "No list") {
///         ForEach(section) { row in Text(row.title) }
///     }
/// }
/// ```
///
/// A change to a column the predicate, a sort descriptor or the section key reads re-evaluates
/// that one row: it enters, leaves, moves within its section or into another, in O(log n) (and
/// O(sections) for a section that appears or goes). Observers of the results hear only that a
/// section appeared or went; observers of a section hear only a change of that section's rows.
/// A change to any other column costs nothing and wakes nobody. Inserts, deletes, transactions
/// (one update at their end), other processes' commits, resets and targets of a to-one change
/// are followed as by ``FetchedResults``.
///
/// Sections are in the order SQL's `ORDER BY` sorts their keys (nil first), or the reverse.
/// A key the database has yet to assign is nil, as a fetch shows it. Sections are told apart
/// as ``LiveGroupedAggregate``'s groups are: by the key as its type stores it.
public final class SectionedResults<Model: TrackedModel, SectionKey: ColumnValue & Hashable>: Observable, RandomAccessCollection, LiveQueryForm {
    public typealias Element = ResultsSection<Model, SectionKey>
    public typealias Index = Int

    private let plan: CompiledQuery
    /// The position of the section key in a row of the query.
    private let column: Int
    private let live: LiveQuery<SectionedResults>
    private let objects: MemberObjects<Model>
    private var members: [SQLValue: SectionPlace] = [:]
    /// Sections by value: those shown, and those emptied in this burst (kept until it is
    /// published, so that a section that empties and fills again stays the same object).
    private var sections: [SQLValue: ResultsSection<Model, SectionKey>] = [:]
    /// The values of the sections shown, in order.
    private var order: GroupOrder
    /// What observers of the results were last told: the sections shown, in order.
    private var publishedOrder: [SQLValue] = []
    /// Whether a section appeared or went in this burst (it may have come back since).
    private var isOrderEdited = false
    /// The values of the sections changed in this burst (kept in `sections` until it is
    /// published).
    private var touched: Set<SQLValue> = []
    private let observation = ObservationRegistrar()
    /// Moves on when the sections shown change.
    private var revision = 0
    /// `\.revision`, made once (see ``FetchedResults``).
    private let revisionKeyPath: KeyPath<SectionedResults, Int>

    /// Sectioned results of a plan that reads the section key at `column`, starting from the
    /// rows it matches now, in its order.
    init(store: ModelStore, plan: CompiledQuery, column: Int, ascending: Bool, matching: [[SQLValue]]) {
        self.plan = plan
        self.column = column
        order = GroupOrder(ascending: ascending)
        objects = MemberObjects(store: store, plan: plan, describedAs: "sectioned results of \(Model.self)")
        revisionKeyPath = \SectionedResults.revision
        live = LiveQuery(store: store, plan: plan, describedAs: "sectioned results of \(Model.self)")
        load(matching, isNew: true)
        publishedOrder = order.values
        live.start(form: self)
    }

    // MARK: - Collection

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        observation.access(self, keyPath: revisionKeyPath)
        return order.values.count
    }

    public subscript(position: Int) -> ResultsSection<Model, SectionKey> {
        observation.access(self, keyPath: revisionKeyPath)
        precondition(position >= 0 && position < order.values.count, "index \(position) is outside the \(order.values.count) sections")
        return section(order.values[position])
    }

    /// The section whose rows have `key`, or nil where no row has it.
    ///
    /// ```swift
    /// sections.section(for: "Groceries")?.count
    /// ```
    public func section(for key: SectionKey) -> ResultsSection<Model, SectionKey>? {
        observation.access(self, keyPath: revisionKeyPath)
        guard let shown = sections[key.sqlValue], !shown.holdsNoRow else { return nil }
        return shown
    }

    private func section(_ value: SQLValue) -> ResultsSection<Model, SectionKey> {
        guard let section = sections[value] else { preconditionFailure("section \(value) is shown but not kept") }
        return section
    }

    /// The section of a value, made where there is none.
    private func sectionMade(for value: SQLValue) -> ResultsSection<Model, SectionKey> {
        if let section = sections[value] { return section }
        let key = GroupOrder.key(value, as: SectionKey.self, grouping: "\(Model.self)")
        let section = ResultsSection(key: key, order: plan.entryOrder, objects: objects)
        sections[value] = section
        return section
    }

    // MARK: - Keeping current

    /// Takes the matching rows, in the query's order: at creation, and at a reset.
    private func load(_ matching: [[SQLValue]], isNew: Bool) {
        members.removeAll(keepingCapacity: true)
        var entries: [SQLValue: [SortedRows.Entry]] = [:]
        for values in matching {
            let place = place(of: values)
            members[place.entry.key] = place
            entries[place.section, default: []].append(place.entry)
            objects.keep(place.entry.key, values: values)
        }
        objects.keepOnly { members[$0] != nil }
        for (value, section) in sections where entries[value] == nil {
            section.replace(withSorted: [], isNew: false)
            touched.insert(value)
        }
        for (value, sorted) in entries {
            let isMade = sections[value] == nil
            let section = sectionMade(for: value)
            section.replace(withSorted: sorted, isNew: isNew || isMade)
            touched.insert(value)
        }
        order.replace(with: entries.keys)
        isOrderEdited = true
    }

    private func place(of values: [SQLValue]) -> SectionPlace {
        SectionPlace(section: GroupOrder.group(of: values, column: column, as: SectionKey.self), entry: plan.entry(of: values))
    }

    // MARK: - Told by the live query

    func place(_ key: SQLValue, values: [SQLValue]?) {
        if let values { objects.keep(key, values: values) }
        // One hash of the key, and one look-up of each section touched.
        let member = members.index(forKey: key)
        let old = member.map { members.values[$0] }, new = values.map(place(of:))
        guard old != new else { return }
        members.setValue(new, forKey: key, foundAt: member)
        if new == nil { objects.forget(key) }
        if let old, let new, old.section == new.section {
            section(old.section).edit(removing: old.entry, inserting: new.entry)
            touched.insert(old.section)
            return
        }
        if let old {
            let section = section(old.section)
            section.edit(removing: old.entry, inserting: nil)
            touched.insert(old.section)
            if section.holdsNoRow {
                order.remove(old.section)
                isOrderEdited = true
            }
        }
        if let new {
            let section = sectionMade(for: new.section)
            if section.holdsNoRow {
                order.insert(new.section)
                isOrderEdited = true
            }
            section.edit(removing: nil, inserting: new.entry)
            touched.insert(new.section)
        }
    }

    func replaceAll(with matching: [[SQLValue]]) {
        load(matching, isNew: false)
    }

    /// Tells each changed section's observers its net change, drops the sections that emptied,
    /// and tells observers of the results if the sections shown changed.
    func publish() {
        let changed = touched
        touched = []
        for value in changed {
            let section = section(value)
            section.publish()
            if section.holdsNoRow { sections[value] = nil }
        }
        guard isOrderEdited else { return }
        isOrderEdited = false
        guard order.values != publishedOrder else { return }
        publishedOrder = order.values
        observation.withMutation(of: self, keyPath: revisionKeyPath) { revision += 1 }
    }

    /// Whether the results keep an object for a row (a member read since it joined); for tests.
    func holdsObject(ofKey key: SQLValue) -> Bool { objects.holds(key) }

    /// Checks that members, sections and their order agree; for tests.
    func checkInvariants() {
        for section in sections.values { section.checkInvariants() }
        precondition(order.values.allSatisfy { sections[$0].map { !$0.holdsNoRow } ?? false }, "a section shown is empty or not kept")
        precondition(sections.values.reduce(0) { $0 + $1.count } == members.count, "members and sections disagree")
    }
}

/// Where a member of sectioned results is: its section's value as stored, and how it sorts
/// there. Not nested in the generic results, so that the members' dictionary is of a type
/// known when compiling, and its look-ups need no generic type at run time.
private struct SectionPlace: Equatable {
    var section: SQLValue
    var entry: SortedRows.Entry
}
