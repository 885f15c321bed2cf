import Foundation
import Observation
@testable import TrackedModels

/// Live aggregates: every program keeps a count, sums (of an integer and of a real column,
/// and of a column read through `link`), an average, a minimum and a maximum live over its
/// generated queries, and after every step each must equal the same aggregate computed afresh
/// over the rows a fresh fetch of the query returns; a value that changed must have been heard
/// by its Observation observers.
extension Harness {
    /// A live aggregate under check.
    @MainActor final class AggregateWatch {
        let name: String
        /// The query whose rows it aggregates.
        let plan: CompiledQuery
        let function: AggregateAccumulator.Function
        /// The aggregated position in a row of the query; nil for a count.
        let column: Int?
        let isReal: Bool
        /// Whether the live value shows a result (compared as text: NaN is NaN, nil is nil).
        let shows: (SQLValue) -> Bool
        let describe: () -> String
        private let observe: (HeardFlag) -> Void
        /// The value as the last check saw it, and whether Observation heard a change since.
        private var seen: String
        private let heard = HeardFlag()

        init<Value>(_ aggregate: LiveAggregate<Item, Value>, name: String, plan: CompiledQuery, function: AggregateAccumulator.Function, column: Int?, isReal: Bool) {
            self.name = name
            self.plan = plan
            self.function = function
            self.column = column
            self.isReal = isReal
            shows = { String(describing: aggregate.value) == String(describing: Value(aggregateResult: $0)) }
            describe = { String(describing: aggregate.value) }
            observe = { heard in withObservationTracking { _ = aggregate.value } onChange: { heard.value = true } }
            seen = String(describing: aggregate.value)
            arm()
        }

        private func arm() {
            heard.value = false
            observe(heard)
        }

        /// Throws where the value changed since the last check and its observers heard nothing.
        func checkHeard() throws {
            let now = describe()
            if now != seen, !heard.value {
                throw Divergence(message: "the live aggregate \(name) went from \(seen) to \(now), and its Observation observers heard nothing")
            }
            seen = now
            arm()
        }
    }

    /// The aggregates kept live over the generated queries, made at open.
    func makeAggregates(_ store: ModelStore) async throws -> [AggregateWatch] {
        let width = Item._$schema.columns.count
        let count = Item.Column.count.rawValue, score = Item.Column.score.rawValue, title = Item.Column.title.rawValue
        var watches: [AggregateWatch] = []
        for (index, query) in generatedQueries.enumerated() {
            guard let rows = try await generatedQueryRows(query) else { continue }
            func make<Value>(_ aggregate: Aggregate<Item, Value>, _ name: String, _ column: Int?) {
                // The plan reads the aggregated column too, as the store's own compile makes it.
                guard let plan = column.map({ query.alsoReading($0) }) ?? query else { return }
                let live = LiveAggregate(store: store, plan: plan, column: column, aggregate: aggregate, matching: rows)
                watches.append(AggregateWatch(live, name: "\(name) of generated query \(index)", plan: plan, function: aggregate.function, column: column, isReal: aggregate.isReal))
            }
            switch index {
            case 0:
                make(.count, "count", nil)
                // A key the database has yet to assign is nil to a fetch: no value.
                make(.maximum(\.id), "maximum(id)", Item.Column.id.rawValue)
                make(.sum(\.count), "sum(count)", count)
                // Through the to-one, where the query joins `link`'s target.
                make(Aggregate<Item, Int?>(function: .sum, keyPath: nil, isReal: false), "sum(link?.count)", width + count)
            case 1:
                make(.sum(\.score), "sum(score)", score)
                make(.average(\.score), "average(score)", score)
                make(.maximum(\.count), "maximum(count)", count)
            default:
                make(.minimum(\.title), "minimum(title)", title)
                make(.average(\.count), "average(count)", count)
            }
        }
        // Through the store's own API, on fixed descriptors: made at once on SQLite, awaited
        // on PostgreSQL.
        func make<Value>(_ aggregate: Aggregate<Item, Value>, of descriptor: FetchDescriptor<Item>, _ name: String) async throws {
            let live = engine == .sqlite ? try store.aggregate(aggregate, of: descriptor) : try await store.async.aggregate(aggregate, of: descriptor)
            let (plan, column) = try store.compile(aggregate, of: descriptor)
            watches.append(AggregateWatch(live, name: name, plan: plan, function: aggregate.function, column: column, isReal: aggregate.isReal))
        }
        try await make(.count, of: FetchDescriptor(predicate: #Predicate { $0.count > 0 }), "count where count > 0")
        try await make(.sum(\.count), of: FetchDescriptor(predicate: #Predicate { $0.flag }), "sum(count) where flag")
        try await make(.sum(\.id), of: FetchDescriptor(), "sum(id)")
        try await make(.average(\.id), of: FetchDescriptor(), "average(id)")
        try await make(.minimum(\.note), of: FetchDescriptor(), "minimum(note)")
        try await make(.maximum(\.note), of: FetchDescriptor(predicate: #Predicate { $0.score > 0 }), "maximum(note) where score > 0")
        return watches
    }

    /// Each live aggregate against the same aggregate over a fresh fetch of its query.
    func checkAggregates() async throws {
        for watch in aggregates {
            guard let rows = try await generatedQueryRows(watch.plan) else { continue }
            var fresh = AggregateAccumulator(watch.function)
            let key = Item._$schema.primaryKeyIndex
            for row in rows {
                let value = watch.column.map { row[$0] } ?? .null
                fresh.add(KeyPlaceholder.request(in: value) == nil ? value : .null, key: row[key])
            }
            let expected = fresh.result(asReal: watch.isReal)
            guard watch.shows(expected) else {
                throw Divergence(message: "the live aggregate \(watch.name) is \(watch.describe()); over a fresh fetch of its \(rows.count) rows it is \(expected)")
            }
            try watch.checkHeard()
        }
    }
}

extension CompiledQuery {
    /// The same query, reading the column at `position` of its row too (a change to it
    /// changes the query's rows); nil for a column of a join the query does not make.
    func alsoReading(_ position: Int) -> CompiledQuery? {
        var own = columnsRead
        var joins = joins
        if position < schema.columns.count {
            own.insert(position)
        } else if !joins.isEmpty, let (join, column) = joined(at: position) {
            joins[join].columnsRead.insert(column)
        } else {
            return nil
        }
        return CompiledQuery(table: table, schema: schema, predicate: predicate, sort: sort, columnsRead: own, joins: joins, limit: limit, offset: offset)
    }
}
