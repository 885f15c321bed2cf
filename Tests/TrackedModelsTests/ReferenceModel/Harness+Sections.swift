import Foundation
import Observation
@testable import TrackedModels

/// Sectioned results and grouped aggregates: every program keeps sections and grouped
/// aggregates live over its generated queries (by a column of `link`'s target, a flag, an
/// optional text in reverse) and over fixed descriptors through the store's own API. After
/// every step each must equal the same query fetched afresh and grouped: the sections in key
/// order with their rows in the query's order, each group's aggregate. Observers of a section
/// or a group that changed must have heard it; after a step on SQLite that changed one row
/// (one event, and no row waiting for its key changed: one burst), observers of one that did not change, which that row is not in and does not
/// reach through `link`, before or after, must have heard nothing.
extension Harness {
    /// Observation of one value, re-armed at each check.
    @MainActor final class Watched {
        private(set) var heard = HeardFlag()
        private let read: @MainActor () -> Void

        init(_ read: @escaping @MainActor () -> Void) {
            self.read = read
            arm()
        }

        func arm() {
            let heard = HeardFlag()
            self.heard = heard
            withObservationTracking { read() } onChange: { heard.value = true }
        }
    }

    /// One group (a section, or an aggregate's group) as the last check saw it.
    struct SeenGroup {
        /// The section's rows' keys as stored, in order (empty for an aggregate's group).
        var keys: [SQLValue]
        /// What the group shows: its keys, or its aggregate's value, as text.
        var shows: String
        /// The rows it held, and the rows their links reach: a change of one may change it.
        var reach: Set<SQLValue>
        let identity: ObjectIdentifier?
        let watched: Watched
    }

    /// Live sections, or a live grouped aggregate, under check.
    @MainActor final class GroupsWatch {
        let name: String
        let plan: CompiledQuery
        /// Where the group key is in a row of the query; for an aggregate, what it aggregates.
        let groupColumn: Int
        let ascending: Bool
        /// A stored group value as the key path's type stores it (the rule for what one group is).
        let canonical: (SQLValue) -> SQLValue
        /// What a group that no row has shows.
        let showsNothing: String
        let aggregate: (function: AggregateAccumulator.Function, column: Int?, isReal: Bool)?
        /// The groups shown, in order: their key as stored, what they show, their object.
        let shown: () -> [(value: SQLValue, shows: String, identity: ObjectIdentifier?)]
        /// What a group shows for an aggregate result (as text: NaN is NaN, nil is nil).
        let showsResult: (SQLValue) -> String
        /// Observes a group's value, or a section's rows.
        let watch: @MainActor (SQLValue) -> Watched
        let holdsObject: (SQLValue) -> Bool
        let elements: () -> [[Item]]
        let checkInvariants: () -> Void
        var groupsWatched: Watched
        var seen: [SQLValue: SeenGroup] = [:]
        var seenOrder: [SQLValue] = []
        /// Whether a check has seen the groups (the first only takes them).
        var isSeen = false

        init<Key>(sections: SectionedResults<Item, Key>, name: String, plan: CompiledQuery, column: Int, ascending: Bool) {
            self.name = name
            self.plan = plan
            groupColumn = column
            self.ascending = ascending
            canonical = { (try? Key(sqlValue: $0))?.sqlValue ?? $0 }
            showsNothing = "[]"
            aggregate = nil
            // Each section as enumerated, and as `section(for:)` finds it by its `id`.
            shown = {
                sections.map { section in
                    let found = sections.section(for: section.id) === section
                    return (value: section.key.sqlValue, shows: found ? "\(section.keys)" : "not found by its key", identity: ObjectIdentifier(section))
                }
            }
            showsResult = { _ in "" }
            watch = { value in
                let section = sections.first { $0.key.sqlValue == value }
                return Watched { _ = section?.keys }
            }
            holdsObject = { sections.holdsObject(ofKey: $0) }
            elements = { sections.map { Array($0) } }
            checkInvariants = { sections.checkInvariants() }
            groupsWatched = Watched { _ = sections.map(\.key) }
        }

        init<Key, Value>(aggregate live: LiveGroupedAggregate<Item, Key, Value>, name: String, plan: CompiledQuery, group: Int, ascending: Bool, function: AggregateAccumulator.Function, column: Int?, isReal: Bool) {
            self.name = name
            self.plan = plan
            groupColumn = group
            self.ascending = ascending
            canonical = { (try? Key(sqlValue: $0))?.sqlValue ?? $0 }
            showsNothing = String(describing: Value(aggregateResult: AggregateAccumulator(function).result(asReal: isReal)))
            aggregate = (function, column, isReal)
            shown = { live.groups.map { (value: $0.sqlValue, shows: String(describing: live[$0]), identity: nil) } }
            showsResult = { String(describing: Value(aggregateResult: $0)) }
            watch = { value in Watched { _ = live[GroupOrder.key(value, as: Key.self, grouping: "Item")] } }
            holdsObject = { _ in false }
            elements = { [] }
            checkInvariants = {}
            groupsWatched = Watched { _ = live.groups }
        }
    }

    /// The sections and grouped aggregates kept live over the generated queries and fixed
    /// descriptors, made at open.
    func makeGroups(_ store: ModelStore) async throws -> [GroupsWatch] {
        let width = Item._$schema.columns.count
        let title = Item.Column.title.rawValue, flag = Item.Column.flag.rawValue, note = Item.Column.note.rawValue
        let count = Item.Column.count.rawValue, score = Item.Column.score.rawValue
        var watches: [GroupsWatch] = []
        waitingRowChanges = 0
        waitingRowToken = store.subscribeToReevaluations(table: 0) { [weak self] _ in self?.waitingRowChanges += 1 }
        for (index, query) in generatedQueries.enumerated() {
            guard let rows = try await generatedQueryRows(query) else { continue }
            func sections<Key: ColumnValue & Hashable>(by column: Int, _ type: Key.Type, ascending: Bool, _ name: String) {
                guard let plan = query.alsoReading(column) else { return }
                let live = SectionedResults<Item, Key>(store: store, plan: plan, column: column, ascending: ascending, matching: rows)
                watches.append(GroupsWatch(sections: live, name: "sections by \(name) of generated query \(index)", plan: plan, column: column, ascending: ascending))
            }
            func grouped<Key: ColumnValue & Hashable, Value>(_ aggregate: Aggregate<Item, Value>, _ column: Int?, by group: Int, _ type: Key.Type, ascending: Bool = true, _ name: String) {
                guard var plan = query.alsoReading(group) else { return }
                if let column { guard let both = plan.alsoReading(column) else { return }; plan = both }
                let live = LiveGroupedAggregate<Item, Key, Value>(store: store, plan: plan, column: column, groupColumn: group, aggregate: aggregate, ascending: ascending, matching: rows)
                watches.append(GroupsWatch(aggregate: live, name: "\(name) of generated query \(index)", plan: plan, group: group, ascending: ascending, function: aggregate.function, column: column, isReal: aggregate.isReal))
            }
            switch index {
            case 0:
                // Through the to-one, where the query joins `link`'s target.
                sections(by: width + title, String?.self, ascending: true, "link?.title")
                grouped(.count, nil, by: width + title, String?.self, "count grouped by link?.title")
            case 1:
                sections(by: flag, Bool.self, ascending: true, "flag")
                grouped(Aggregate<Item, Double>.sum(\.score), score, by: flag, Bool.self, "sum(score) grouped by flag")
            default:
                sections(by: note, String?.self, ascending: false, "note, reversed")
                grouped(Aggregate<Item, Int?>.maximum(\.count), count, by: note, String?.self, ascending: false, "maximum(count) grouped by note, reversed")
            }
        }
        // Through the store's own API, on fixed descriptors: made at once on SQLite, awaited on
        // PostgreSQL.
        let descriptor = FetchDescriptor<Item>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.title), SortDescriptor(\.score, order: .reverse)])
        let byLink = engine == .sqlite
            ? try store.results(for: descriptor, sectionedBy: \.link?.title)
            : try await store.async.results(for: descriptor, sectionedBy: \.link?.title)
        let (plan, positions) = try store.compileWhole(descriptor, reading: [\Item.link?.title], for: "sectioned results")
        watches.append(GroupsWatch(sections: byLink, name: "sections by link?.title where count > 0", plan: plan, column: positions[0], ascending: true))
        let byCount = engine == .sqlite
            ? try store.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.note)]), sectionedBy: \.count, order: .reverse)
            : try await store.async.results(for: FetchDescriptor<Item>(sortBy: [SortDescriptor(\.note)]), sectionedBy: \.count, order: .reverse)
        let (countPlan, countPositions) = try store.compileWhole(FetchDescriptor<Item>(sortBy: [SortDescriptor(\.note)]), reading: [\Item.count], for: "sectioned results")
        watches.append(GroupsWatch(sections: byCount, name: "sections by count, reversed", plan: countPlan, column: countPositions[0], ascending: false))
        func grouped<Key: ColumnValue & Hashable, Value>(_ aggregate: Aggregate<Item, Value>, of descriptor: FetchDescriptor<Item>, by keyPath: KeyPath<Item, Key>, _ name: String) async throws {
            let live = engine == .sqlite
                ? try store.aggregate(aggregate, of: descriptor, groupedBy: keyPath)
                : try await store.async.aggregate(aggregate, of: descriptor, groupedBy: keyPath)
            let (plan, column, group) = try store.compile(aggregate, of: descriptor, groupedBy: keyPath)
            watches.append(GroupsWatch(aggregate: live, name: name, plan: plan, group: group, ascending: true, function: aggregate.function, column: column, isReal: aggregate.isReal))
        }
        try await grouped(.average(\.count), of: FetchDescriptor(), by: \.link?.title, "average(count) grouped by link?.title")
        try await grouped(.minimum(\.title), of: FetchDescriptor(predicate: #Predicate { $0.flag }), by: \.note, "minimum(title) where flag, grouped by note")
        try await grouped(.count, of: FetchDescriptor(), by: \.link?.count, "count grouped by link?.count")
        return watches
    }

    /// Each live sectioning or grouped aggregate against the same query fetched afresh and
    /// grouped; and what its observers heard against what changed.
    func checkGroups() async throws {
        // After one event, the row it names was in two places only: where it was and where it
        // is. After several, a row may have passed through any group, and so may a row waiting
        // for its key, which no table feed tells of. On PostgreSQL a form places a row once its
        // read comes back, a burst of its own: a row whose key arrives leaves in one burst and
        // comes back in another.
        let touched: SQLValue? = engine == .sqlite && events.count == 1 && events[0].kind != .reset && waitingRowChanges == 0
            ? .some(events[0].key) : .none
        waitingRowChanges = 0
        let link = Item.Column.link.rawValue
        for watch in groups {
            guard let rows = try await generatedQueryRows(watch.plan) else { continue }
            watch.checkInvariants()
            // The rows of each group, in the query's order, and the groups in order.
            var members: [SQLValue: [[SQLValue]]] = [:]
            for row in rows {
                let stored = KeyPlaceholder.request(in: row[watch.groupColumn]) == nil ? row[watch.groupColumn] : .null
                members[watch.canonical(stored), default: []].append(row)
            }
            var order = GroupOrder(ascending: watch.ascending)
            order.replace(with: members.keys)
            var expected: [(value: SQLValue, shows: String, keys: [SQLValue])] = []
            for value in order.values {
                let rows = members[value] ?? []
                let keys = rows.map { $0[Item._$schema.primaryKeyIndex] }
                if let aggregate = watch.aggregate {
                    var fresh = AggregateAccumulator(aggregate.function)
                    for (row, key) in zip(rows, keys) { fresh.add(aggregate.column.map { GroupOrder.value(of: row, column: $0) } ?? .null, key: key) }
                    expected.append((value, watch.showsResult(fresh.result(asReal: aggregate.isReal)), keys))
                } else {
                    expected.append((value, "\(keys.map { KeyPlaceholder.request(in: $0) == nil ? try? Int64(sqlValue: $0) : nil })", keys))
                }
            }
            let live = watch.shown()
            guard live.map(\.value) == expected.map(\.value), live.map(\.shows) == expected.map(\.shows) else {
                throw Divergence(message: "the \(watch.name) show \(live.map { "\($0.value.describedExactly): \($0.shows)" }); over a fresh fetch of their \(rows.count) rows they are \(expected.map { "\($0.value.describedExactly): \($0.shows)" })")
            }
            if engine == .sqlite {
                for (section, keys) in zip(watch.elements(), expected.map(\.keys)) {
                    for (element, key) in zip(section, keys) where KeyPlaceholder.request(in: key) == nil {
                        guard element === (try await find(try Int64(sqlValue: key))) else {
                            throw Divergence(message: "the \(watch.name) hold another object for row \(key.describedExactly) than find returns")
                        }
                    }
                }
            }
            // What observers heard.
            if watch.isSeen, expected.map(\.value) != watch.seenOrder, !watch.groupsWatched.heard.value {
                throw Divergence(message: "the groups of the \(watch.name) went from \(watch.seenOrder.map(\.describedExactly)) to \(expected.map { $0.value.describedExactly }), and their observers heard nothing")
            }
            let linkOf = Dictionary(rows.map { ($0[Item._$schema.primaryKeyIndex], $0[link]) }, uniquingKeysWith: { a, _ in a })
            var now: [SQLValue: SeenGroup] = [:]
            for (index, group) in expected.enumerated() {
                let reach = Set(group.keys + group.keys.compactMap { linkOf[$0] })
                if watch.isSeen, let before = watch.seen[group.value], before.identity == live[index].identity {
                    let heard = before.watched.heard.value
                    if group.shows != before.shows, !heard {
                        throw Divergence(message: "the group \(group.value.describedExactly) of the \(watch.name) went from \(before.shows) to \(group.shows), and its observers heard nothing")
                    }
                    if group.shows == before.shows, heard, let touched, !before.reach.contains(touched), !reach.contains(touched) {
                        throw Divergence(message: "the observers of group \(group.value.describedExactly) of the \(watch.name) heard a change, but it shows \(group.shows) as it did, and the one row changed (\(touched.describedExactly)) is not in it (heard: \(events.map { "\($0.kind) \($0.key.describedExactly) \($0.changes.map(\.column))" }))")
                    }
                }
                now[group.value] = SeenGroup(keys: group.keys, shows: group.shows, reach: reach, identity: live[index].identity, watched: watch.watch(group.value))
            }
            for (value, before) in watch.seen where now[value] == nil && before.shows != watch.showsNothing && !before.watched.heard.value {
                throw Divergence(message: "the group \(value.describedExactly) of the \(watch.name) emptied, and its observers heard nothing")
            }
            watch.seen = now
            watch.isSeen = true
            watch.seenOrder = expected.map(\.value)
            watch.groupsWatched.arm()
        }
    }
}
