import Foundation

/// The running state of one aggregate over a multiset of column values: each value added or
/// removed in O(1), or O(log n) for a minimum or a maximum, and the result read in O(1).
///
/// The rule, the same in memory as in SQL (`COUNT(*)`, `SUM`, `AVG`, `MIN`, `MAX`): NULL
/// values (and a pending NaN, which a query takes as NULL) are left out, except by ``count``,
/// which counts rows. A sum is exact, then rounded once: an integer sum is NULL where it leaves
/// Int64's range (SQLite's `SUM` fails there), a sum of doubles is the exact sum rounded to the
/// nearest double (±infinity past the largest; +infinity and -infinity together are NaN). An
/// average is that sum divided by the number of values, NULL for none. A minimum or maximum
/// is NULL for no values.
///
/// ```swift
/// var total = AggregateAccumulator(.sum)
/// total.add(.integer(3), key: .integer(1))
/// total.add(.integer(4), key: .integer(2))
/// total.result(asReal: false)   // .integer(7)
/// ```
struct AggregateAccumulator {
    enum Function: Hashable, Sendable {
        case count, sum, average, minimum, maximum
    }

    let function: Function
    private(set) var rows = 0
    /// Values that are not NULL.
    private var values = 0
    private var sum = ExactSum()
    private var positiveInfinities = 0
    private var negativeInfinities = 0
    /// The values in order, by (value, key), for a minimum or a maximum.
    private var ordered: SortedRows?

    init(_ function: Function) {
        self.function = function
        if function == .minimum || function == .maximum {
            ordered = SortedRows(order: SortedRows.Order(terms: [SortedRows.Order.Term(ascending: true, textOrder: .binary)]))
        }
    }

    mutating func add(_ value: SQLValue, key: SQLValue) {
        change(value, key: key, by: 1)
    }

    mutating func remove(_ value: SQLValue, key: SQLValue) {
        change(value, key: key, by: -1)
    }

    /// The aggregate's value, NULL where it has none.
    ///
    /// - Parameter asReal: Whether the column holds doubles: its sum is a real.
    func result(asReal: Bool) -> SQLValue {
        switch function {
        case .count:
            return .integer(Int64(rows))
        case .sum:
            return asReal ? .real(realSum) : sum.integer.map(SQLValue.integer) ?? .null
        case .average:
            return values == 0 ? .null : .real(realSum / Double(values))
        case .minimum:
            return ordered.flatMap { $0.count == 0 ? nil : $0[0].head } ?? .null
        case .maximum:
            return ordered.flatMap { $0.count == 0 ? nil : $0[$0.count - 1].head } ?? .null
        }
    }

    private var realSum: Double {
        switch (positiveInfinities > 0, negativeInfinities > 0) {
        case (true, true): .nan
        case (true, false): .infinity
        case (false, true): -.infinity
        case (false, false): sum.double
        }
    }

    private mutating func change(_ value: SQLValue, key: SQLValue, by delta: Int) {
        rows += delta
        let value = value.nanAsNull
        guard value != .null else { return }
        values += delta
        if ordered != nil {
            let entry = SortedRows.Entry(head: value, middle: [], key: key)
            if delta > 0 { ordered?.insert(entry) } else { ordered?.remove(entry) }
        } else if case .real(let real) = value, real.isInfinite {
            if real > 0 { positiveInfinities += delta } else { negativeInfinities += delta }
        } else if delta > 0 {
            sum.add(value)
        } else {
            sum.remove(value)
        }
    }
}
