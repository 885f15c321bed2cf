import Foundation

extension SQLValue {
    /// Orders two values as SQLite's `ORDER BY` does with the BINARY collation: NULL, then
    /// numbers (INTEGER and REAL compared by value), then text (by UTF-8 bytes), then blobs (by
    /// bytes). In-memory order then agrees with the order the database returns.
    ///
    /// A NaN (pending only: the database refuses it) sorts as NULL, as it is matched: SQLite
    /// would have stored NULL.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/datatype3.html#sort_order>
    static func compare(_ a: SQLValue, _ b: SQLValue) -> ComparisonResult {
        // Two integers, the most common case of a live list's order, without copying a value.
        if case .integer(let x) = a, case .integer(let y) = b { return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame }
        switch (a.nanAsNull, b.nanAsNull) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case (.real(let x), .real(let y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case (.integer(let x), .real(let y)): return compare(integer: x, real: y)
        case (.real(let x), .integer(let y)): return compare(integer: y, real: x).reversed
        case (.integer, _), (.real, _): return .orderedAscending
        case (_, .integer), (_, .real): return .orderedDescending
        case (.text(let x), .text(let y)): return bytes(x.utf8, y.utf8)
        case (.text, .blob): return .orderedAscending
        case (.blob, .text): return .orderedDescending
        case (.blob(let x), .blob(let y)): return bytes(x, y)
        }
    }

    /// Whether an integer and a real are the same number (`0` and `0.0`).
    func isSameNumber(as other: SQLValue) -> Bool {
        switch (self, other) {
        case (.integer, .real), (.real, .integer): Self.compare(self, other) == .orderedSame
        default: false
        }
    }

    /// The value as a query takes it: a NaN (pending only: the database refuses it) as NULL,
    /// which SQLite would have stored for it, so that it matches no comparison and sorts first.
    var nanAsNull: SQLValue {
        if case .real(let value) = self, value.isNaN { .null } else { self }
    }

    private static func compare(integer: Int64, real: Double) -> ComparisonResult {
        let converted = Double(integer)
        if converted < real { return .orderedAscending }
        if converted > real { return .orderedDescending }
        // Equal as doubles: compare exactly, unless the real is out of Int64's range.
        guard real >= -9.223372036854775808e18, real < 9.223372036854775808e18 else { return real < 0 ? .orderedDescending : .orderedAscending }
        let truncated = Int64(real)
        return integer < truncated ? .orderedAscending : integer > truncated ? .orderedDescending : .orderedSame
    }

    private static func bytes<C: Collection<UInt8>>(_ x: C, _ y: C) -> ComparisonResult {
        var left = x.makeIterator()
        var right = y.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let l?, let r?) where l != r: return l < r ? .orderedAscending : .orderedDescending
            default: continue
            }
        }
    }
}

extension ComparisonResult {
    fileprivate var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}

extension Sequence<SQLValue> {
    /// The values in the order ``SQLValue/compare(_:_:)`` gives: a set's keys in one order,
    /// whatever the set's own (which differs from one set to another with the same keys).
    func sortedInValueOrder() -> [SQLValue] {
        sorted { SQLValue.compare($0, $1) == .orderedAscending }
    }
}
