/// What a ``LiveAggregate`` computes over the rows a descriptor matches: a count of rows, or
/// the sum, average, minimum or maximum of a column (of the model, or of what a to-one
/// relationship points at: `\.list?.count`).
///
/// ```swift
/// let busy = try store.aggregate(.count, of: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
/// let total = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>())
/// let top = try store.aggregate(.maximum(\.count), of: FetchDescriptor<Row>())
/// ```
///
/// The rule, the same in memory as in SQL: NULL values are left out, except by ``count``,
/// which counts rows. A sum is exact, then rounded once: an integer sum is nil where it leaves
/// its type's range (where SQLite's `SUM` fails), a sum of doubles is the exact sum rounded to
/// the nearest double (±infinity past the largest; both infinities together are NaN), 0 for no
/// rows. An average is that sum divided by the number of values; it, a minimum and a maximum
/// are nil where there are no values.
public struct Aggregate<Model: TrackedModel, Value: AggregateValue> {
    let function: AggregateAccumulator.Function
    /// The column aggregated; nil for a count of rows.
    let keyPath: AnyKeyPath?
    /// Whether the column holds doubles (its sum is a real).
    let isReal: Bool
}

extension Aggregate where Value == Int {
    /// The number of matching rows.
    public static var count: Self {
        Self(function: .count, keyPath: nil, isReal: false)
    }
}

extension Aggregate {
    /// The sum of an integer column; nil where it leaves `Column`'s range.
    public static func sum<Column: ColumnValue & FixedWidthInteger>(_ keyPath: KeyPath<Model, Column>) -> Self where Value == Column? {
        Self(function: .sum, keyPath: keyPath, isReal: false)
    }

    /// The sum of an optional integer column's values; nil where it leaves `Column`'s range.
    public static func sum<Column: ColumnValue & FixedWidthInteger>(_ keyPath: KeyPath<Model, Column?>) -> Self where Value == Column? {
        Self(function: .sum, keyPath: keyPath, isReal: false)
    }

    /// The sum of a column of doubles, exact and then rounded once.
    public static func sum(_ keyPath: KeyPath<Model, Double>) -> Self where Value == Double {
        Self(function: .sum, keyPath: keyPath, isReal: true)
    }

    /// The sum of an optional column of doubles' values, exact and then rounded once.
    public static func sum(_ keyPath: KeyPath<Model, Double?>) -> Self where Value == Double {
        Self(function: .sum, keyPath: keyPath, isReal: true)
    }

    /// The average of a numeric column's values; nil where there are none.
    public static func average<Column: ColumnValue & Numeric>(_ keyPath: KeyPath<Model, Column>) -> Self where Value == Double? {
        Self(function: .average, keyPath: keyPath, isReal: true)
    }

    /// The average of an optional numeric column's values; nil where there are none.
    public static func average<Column: ColumnValue & Numeric>(_ keyPath: KeyPath<Model, Column?>) -> Self where Value == Double? {
        Self(function: .average, keyPath: keyPath, isReal: true)
    }

    /// The smallest value of a column (numbers by value, text by Unicode scalars, as a
    /// `.lexical` sort orders them); nil where there are none.
    public static func minimum<Column: ColumnValue & Comparable>(_ keyPath: KeyPath<Model, Column>) -> Self where Value == Column? {
        Self(function: .minimum, keyPath: keyPath, isReal: false)
    }

    /// The smallest value of an optional column; nil where there are none.
    public static func minimum<Column: ColumnValue & Comparable>(_ keyPath: KeyPath<Model, Column?>) -> Self where Value == Column? {
        Self(function: .minimum, keyPath: keyPath, isReal: false)
    }

    /// The largest value of a column (numbers by value, text by Unicode scalars, as a
    /// `.lexical` sort orders them); nil where there are none.
    public static func maximum<Column: ColumnValue & Comparable>(_ keyPath: KeyPath<Model, Column>) -> Self where Value == Column? {
        Self(function: .maximum, keyPath: keyPath, isReal: false)
    }

    /// The largest value of an optional column; nil where there are none.
    public static func maximum<Column: ColumnValue & Comparable>(_ keyPath: KeyPath<Model, Column?>) -> Self where Value == Column? {
        Self(function: .maximum, keyPath: keyPath, isReal: false)
    }
}

/// A type an aggregate's value takes: `Int` for a count, `Double` for a sum of doubles, an
/// optional column value for the others (nil for no values, or a sum its type cannot hold).
public protocol AggregateValue: Equatable {
    /// The value of an aggregate's result (NULL where it has none).
    init(aggregateResult: SQLValue)
    /// Whether the value is a NaN, which equals nothing, not even itself.
    var isNaN: Bool { get }
}

extension AggregateValue {
    public var isNaN: Bool { false }
}

extension Int: AggregateValue {
    public init(aggregateResult: SQLValue) {
        self = if case .integer(let integer) = aggregateResult { Int(integer) } else { 0 }
    }
}

extension Double: AggregateValue {
    public init(aggregateResult: SQLValue) {
        self = switch aggregateResult {
        case .real(let real): real
        case .integer(let integer): Double(integer)
        default: 0
        }
    }
}

extension Optional: AggregateValue where Wrapped: ColumnValue {
    public init(aggregateResult: SQLValue) {
        self = aggregateResult == .null ? nil : try? Wrapped(sqlValue: aggregateResult)
    }

    public var isNaN: Bool { (self as? Double)?.isNaN ?? false }
}
