public import Observation

/// An aggregate (see ``Aggregate``) of the rows a ``FetchDescriptor`` matches, for each value
/// of a key path (a column, or a column of what a to-one relationship points at:
/// `\.list?.title`), kept current with every change instead of re-run: SQL's `GROUP BY`, live.
///
/// ```swift
/// let perList = try store.aggregate(.count, of: FetchDescriptor<Row>(), groupedBy: \.list?.title)
/// for list in perList.groups { print(list ?? "No list", perList[list]) }
/// Text("\(perList["Groceries"]) to buy")   // SwiftUI hears this group's count only
/// ```
///
/// ``groups`` are the values that at least one matching row has, in the order SQL's
/// `ORDER BY` sorts them (nil first), or the reverse; observers of ``groups`` hear a group
/// appear or go. A group's value (``subscript(_:)``) is observed alone: a change of one group
/// wakes no observer of another. A group no row has shows the aggregate of no rows (a count
/// of 0, nil for a minimum). A change re-evaluates one row, and updates its groups in O(1)
/// (a count, a sum, an average) or O(log n) (a minimum, a maximum), as ``LiveAggregate``
/// does, and O(groups) more where a group appears or goes; a change that leaves a group's
/// value as it was notifies nobody.
///
/// Groups are told apart by their value as the key path's type stores it: a UUID stored in
/// upper case and in lower case is one group. Texts are grouped by their Unicode scalars, as
/// SQL groups them: "é" composed and decomposed are two groups, which `==` cannot tell apart
/// (each one's observers hear the other's changes too).
public final class LiveGroupedAggregate<Model: TrackedModel, Group: ColumnValue & Hashable, Value: AggregateValue>: Observable, LiveQueryForm {
    /// What a group's observers were last told.
    private struct GroupState {
        let key: Group
        /// `\.[key]`, made once: a key path with an argument is made at run time.
        let keyPath: KeyPath<LiveGroupedAggregate, Value>
        var result: SQLValue
        var value: Value
    }

    private let aggregate: Aggregate<Model, Value>
    /// The positions of the aggregated column (nil for a count) and of the group key in a row
    /// of the query.
    private let column: Int?
    private let groupColumn: Int
    private let live: LiveQuery<LiveGroupedAggregate>
    private var members: [SQLValue: GroupMembership] = [:]
    /// Each group's rows folded, while it has rows. Apart from `states`, and of types known
    /// when compiling, so that a change looks up no generic type at run time.
    private var tallies: [SQLValue: AggregateAccumulator] = [:]
    /// What each group's observers were last told: made when a group with rows is first told
    /// (``told(_:)``), kept until its emptying is told.
    private var states: [SQLValue: GroupState] = [:]
    /// The groups that have rows, in order.
    private var order: GroupOrder
    /// The groups as observers of ``groups`` were last told.
    private var shownGroups: [Group] = []
    private var publishedOrder: [SQLValue] = []
    private var isOrderEdited = false
    /// Groups changed in this burst.
    private var touched: Set<SQLValue> = []
    /// The result of no rows, and its value.
    private let emptyResult: SQLValue
    private let emptyValue: Value
    private let observation = ObservationRegistrar()
    private var groupsRevision = 0
    /// `\.groupsRevision`, made once (see ``FetchedResults``).
    private let groupsKeyPath: KeyPath<LiveGroupedAggregate, Int>

    init(store: ModelStore, plan: CompiledQuery, column: Int?, groupColumn: Int, aggregate: Aggregate<Model, Value>, ascending: Bool, matching: [[SQLValue]]) {
        self.aggregate = aggregate
        self.column = column
        self.groupColumn = groupColumn
        order = GroupOrder(ascending: ascending)
        emptyResult = AggregateAccumulator(aggregate.function).result(asReal: aggregate.isReal)
        emptyValue = Value(aggregateResult: emptyResult)
        groupsKeyPath = \LiveGroupedAggregate.groupsRevision
        live = LiveQuery(store: store, plan: plan, describedAs: "a live grouped aggregate of \(Model.self)")
        load(matching)
        for value in touched { told(value) }
        touched = []
        tellGroups()
        live.start(form: self)
    }

    /// The groups: each value of the key path that a matching row has, in order.
    public var groups: [Group] {
        observation.access(self, keyPath: groupsKeyPath)
        return shownGroups
    }

    /// The aggregate of the matching rows whose key path has the value `group`: the aggregate
    /// of no rows where none has it.
    public subscript(group: Group) -> Value {
        let state = states[group.sqlValue]
        observation.access(self, keyPath: state?.keyPath ?? \LiveGroupedAggregate[group])
        return state?.value ?? emptyValue
    }

    // MARK: - Told by the live query

    /// What a row of the query adds, and where (see ``LiveAggregate``).
    private func membership(of values: [SQLValue]) -> GroupMembership {
        let contribution = column.map { GroupOrder.value(of: values, column: $0) } ?? .null
        return GroupMembership(group: GroupOrder.group(of: values, column: groupColumn, as: Group.self), contribution: contribution)
    }

    private func load(_ matching: [[SQLValue]]) {
        members.removeAll(keepingCapacity: true)
        tallies.removeAll(keepingCapacity: true)
        touched.formUnion(states.keys)
        for values in matching {
            let key = values[live.plan.schema.primaryKeyIndex], membership = membership(of: values)
            members[key] = membership
            add(membership, key: key)
        }
        order.replace(with: tallies.keys)
        isOrderEdited = true
    }

    private func add(_ membership: GroupMembership, key: SQLValue) {
        tallies[membership.group, default: AggregateAccumulator(aggregate.function)].add(membership.contribution, key: key)
        touched.insert(membership.group)
    }

    func place(_ key: SQLValue, values: [SQLValue]?) {
        let member = members.index(forKey: key)
        let old = member.map { members.values[$0] }, new = values.map(membership(of:))
        guard old != new else { return }
        members.setValue(new, forKey: key, foundAt: member)
        if let old, let tally = tallies.index(forKey: old.group) {
            tallies.values[tally].remove(old.contribution, key: key)
            touched.insert(old.group)
            if tallies.values[tally].rows == 0 {
                tallies.remove(at: tally)
                order.remove(old.group)
                isOrderEdited = true
            }
        }
        if let new {
            if tallies[new.group] == nil {
                order.insert(new.group)
                isOrderEdited = true
            }
            add(new, key: key)
        }
    }

    func replaceAll(with matching: [[SQLValue]]) {
        load(matching)
    }

    /// Tells each changed group's observers its new value, drops the groups that emptied, and
    /// tells observers of ``groups`` if the groups changed.
    func publish() {
        let changed = touched
        touched = []
        for group in changed { told(group) }
        tellGroups()
    }

    /// Takes a group's new result, telling its observers where its value changed; drops it
    /// where it has no rows.
    private func told(_ group: SQLValue) {
        let tally = tallies[group]
        let state: GroupState
        if let told = states[group] {
            state = told
        } else if tally != nil {
            state = madeState(for: group)
        } else {
            return
        }
        let isEmpty = tally == nil
        let result = tally?.result(asReal: aggregate.isReal) ?? emptyResult
        if isEmpty { states[group] = nil } else { states[group]?.result = result }
        guard !SQLValue.isIdentical(result, state.result) else { return }
        let value = Value(aggregateResult: result)
        guard value != state.value, !(value.isNaN && state.value.isNaN) else {
            if !isEmpty { states[group]?.value = value }
            return
        }
        observation.withMutation(of: self, keyPath: state.keyPath) {
            if !isEmpty { states[group]?.value = value }
        }
    }

    /// The state of a group that has just got rows, before its observers are told.
    private func madeState(for group: SQLValue) -> GroupState {
        let key = GroupOrder.key(group, as: Group.self, grouping: "\(Model.self)")
        let state = GroupState(key: key, keyPath: \LiveGroupedAggregate[key], result: emptyResult, value: emptyValue)
        states[group] = state
        return state
    }

    /// Tells observers of ``groups`` if groups appeared or went since they were last told.
    private func tellGroups() {
        guard isOrderEdited else { return }
        isOrderEdited = false
        guard order.values != publishedOrder else { return }
        publishedOrder = order.values
        let groups = order.values.compactMap { states[$0]?.key }
        observation.withMutation(of: self, keyPath: groupsKeyPath) { shownGroups = groups }
    }
}

/// Where a member of a grouped aggregate counts: its group's value as stored, and what it
/// contributes there. Not nested in the generic aggregate, so that the members' dictionary is
/// of a type known when compiling, and its look-ups need no generic type at run time.
private struct GroupMembership: Equatable {
    var group: SQLValue
    var contribution: SQLValue

    static func == (a: GroupMembership, b: GroupMembership) -> Bool {
        a.group == b.group && SQLValue.isIdentical(a.contribution, b.contribution)
    }
}
