public import Observation

/// An aggregate of the rows a ``FetchDescriptor`` matches (see ``Aggregate``), kept current
/// with every change instead of re-run: an `Observable` ``value`` for a badge, a total, a
/// "12 rows with count > 0".
///
/// ```swift
/// let busy = try store.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
/// let total = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
/// Text("\(busy.value) busy, \(total.value ?? 0) in all")   // SwiftUI follows both
/// ```
///
/// A change to a column the predicate or the aggregate reads re-evaluates that one row, as a
/// live list does (``FetchedResults``), and updates the value in O(1) (a count, a sum, an
/// average) or O(log n) (a minimum, a maximum); a change to any other column costs nothing. A
/// change that leaves the value as it was notifies nobody. Inserts, deletes, transactions,
/// other processes' commits and resets are followed alike. The value counts changes not yet
/// flushed, as ``ModelStore/fetchCount(_:)`` does.
public final class LiveAggregate<Model: TrackedModel, Value: AggregateValue>: Observable, LiveQueryForm {
    private let aggregate: Aggregate<Model, Value>
    /// The position of the aggregated column in a row of the query; nil for a count.
    private let column: Int?
    private let live: LiveQuery<LiveAggregate>
    /// The value each matching row contributes, by key.
    private var members: [SQLValue: SQLValue] = [:]
    private var accumulator: AggregateAccumulator
    /// The accumulator's result as last published, and its value.
    private var result: SQLValue
    private var current: Value
    private let observation = ObservationRegistrar()
    /// `\.value`, made once (see ``FetchedResults``).
    private let valueKeyPath: KeyPath<LiveAggregate, Value>

    /// The aggregate of the matching rows as they are now.
    public var value: Value {
        observation.access(self, keyPath: valueKeyPath)
        return current
    }

    init(store: ModelStore, plan: CompiledQuery, column: Int?, aggregate: Aggregate<Model, Value>, matching: [[SQLValue]]) {
        self.aggregate = aggregate
        self.column = column
        accumulator = AggregateAccumulator(aggregate.function)
        result = accumulator.result(asReal: aggregate.isReal)
        current = Value(aggregateResult: result)
        valueKeyPath = \LiveAggregate.value
        live = LiveQuery(store: store, plan: plan, describedAs: "a live aggregate of \(Model.self)")
        load(matching)
        result = accumulator.result(asReal: aggregate.isReal)
        current = Value(aggregateResult: result)
        live.start(form: self)
    }

    private func load(_ matching: [[SQLValue]]) {
        members.removeAll(keepingCapacity: true)
        accumulator = AggregateAccumulator(aggregate.function)
        for values in matching {
            let key = values[live.plan.schema.primaryKeyIndex], contribution = contribution(of: values)
            members[key] = contribution
            accumulator.add(contribution, key: key)
        }
    }

    // MARK: - Told by the live query

    /// What a row of the query adds: its value of the column (NULL for a count), and NULL for
    /// a key the database has yet to assign, which a fetch shows as nil.
    private func contribution(of values: [SQLValue]) -> SQLValue {
        guard let column, KeyPlaceholder.request(in: values[column]) == nil else { return .null }
        return values[column]
    }

    func place(_ key: SQLValue, values: [SQLValue]?) {
        let new = values.map(contribution)
        let old = members[key]
        // Bit for bit: 0.0 and -0.0 are equal, yet a minimum shows which one it is.
        guard !SQLValue.isIdentical(old, new) else { return }
        if let old { accumulator.remove(old, key: key) }
        if let new { accumulator.add(new, key: key) }
        members[key] = new
    }

    func replaceAll(with matching: [[SQLValue]]) {
        load(matching)
    }

    /// Tells observers the new value, if it changed: not where the result is the same (a NaN
    /// that stays NaN), nor where the value is (an Int32 sum past its range stays nil; 3.0
    /// read back as 3), which is taken in silence.
    func publish() {
        let new = accumulator.result(asReal: aggregate.isReal)
        guard !SQLValue.isIdentical(new, result) else { return }
        result = new
        let value = Value(aggregateResult: new)
        guard value != current, !(value.isNaN && current.isNaN) else { return current = value }
        observation.withMutation(of: self, keyPath: valueKeyPath) { current = value }
    }
}

extension SQLValue {
    /// Whether two values are the same bit for bit (a real's sign of zero, NaN as NaN).
    static func isIdentical(_ a: SQLValue?, _ b: SQLValue?) -> Bool {
        if case .real(let x)? = a, case .real(let y)? = b { return x.bitPattern == y.bitPattern }
        return a == b
    }
}
