import Foundation

/// A predicate compiled for one table: one tree that an engine's dialect writes as SQL and
/// ``evaluate(_:)`` runs over a row's values, with one semantics for both.
///
/// The semantics are SQL's, as SQLite computes it, and they agree with Swift's wherever Swift
/// defines a result:
/// - a value is NULL, an integer, a real, text or bytes; a column's NaN is NULL;
/// - text compares by Unicode scalar values (SQLite's `BINARY`, PostgreSQL's `COLLATE "C"`), so
///   `"é"` and `"e\u{301}"` differ, where Swift's `==` calls them equal;
/// - `==` and `!=` are `IS` and `IS NOT`: nil equals nil, as in Swift;
/// - an ordering with a NULL operand is NULL, a row matches only when the whole is true (three
///   valued logic), and arithmetic with a NULL operand is NULL;
/// - integer arithmetic that overflows becomes a real, division or remainder by zero is NULL
///   (Swift would trap); a real result that is NaN is NULL.
indirect enum QueryExpression: Hashable, Sendable {
    enum Comparison: Hashable, Sendable {
        /// `==`: `IS`.
        case equal
        /// `!=`: `IS NOT`.
        case notEqual
        case less, lessOrEqual, greater, greaterOrEqual
    }

    enum Arithmetic: Hashable, Sendable {
        case add, subtract, multiply
        /// Integer division, truncating toward zero.
        case divide
        case remainder
        /// Division of the left side as a real.
        case realDivide
    }

    /// The column at this position of the table's schema.
    case column(Int)
    /// A bound value; `.null` for `nil`.
    case value(SQLValue)
    case compare(Comparison, QueryExpression, QueryExpression)
    case and(QueryExpression, QueryExpression)
    case or(QueryExpression, QueryExpression)
    case not(QueryExpression)
    case arithmetic(Arithmetic, QueryExpression, QueryExpression)
    case negate(QueryExpression)
    /// The left side unless it is NULL, else the right.
    case coalesce(QueryExpression, QueryExpression)
    /// `test ? whenTrue : whenFalse`; a NULL test takes `whenFalse`.
    case conditional(QueryExpression, QueryExpression, QueryExpression)
    /// Whether the text holds the other text anywhere (by its UTF-8 bytes); `""` is in every text.
    case contains(QueryExpression, QueryExpression)
    /// Whether the text starts with the other text (by its UTF-8 bytes).
    case startsWith(QueryExpression, QueryExpression)
    /// Whether the value equals one of the values (none NULL). An empty list holds nothing,
    /// not even NULL.
    case isIn(QueryExpression, [SQLValue])

    /// Whether a row matches: the expression is true.
    func matches(_ row: [SQLValue]) -> Bool {
        Self.truth(evaluate(row)) == true
    }

    /// The value of the expression for a row, in model column order.
    func evaluate(_ row: [SQLValue]) -> SQLValue {
        switch self {
        case .column(let index):
            return row[index].nanAsNull
        case .value(let value):
            return value
        case .compare(let comparison, let lhs, let rhs):
            return Self.compare(comparison, lhs.evaluate(row), rhs.evaluate(row))
        case .and(let lhs, let rhs):
            let left = Self.truth(lhs.evaluate(row))
            if left == false { return .integer(0) }
            let right = Self.truth(rhs.evaluate(row))
            if right == false { return .integer(0) }
            return left == nil || right == nil ? .null : .integer(1)
        case .or(let lhs, let rhs):
            let left = Self.truth(lhs.evaluate(row))
            if left == true { return .integer(1) }
            let right = Self.truth(rhs.evaluate(row))
            if right == true { return .integer(1) }
            return left == nil || right == nil ? .null : .integer(0)
        case .not(let operand):
            return Self.truth(operand.evaluate(row)).map { .integer($0 ? 0 : 1) } ?? .null
        case .arithmetic(let operation, let lhs, let rhs):
            return Self.arithmetic(operation, lhs.evaluate(row), rhs.evaluate(row))
        case .negate(let operand):
            switch Self.numeric(operand.evaluate(row)) {
            case .integer(let value): return value == .min ? .real(-Double(value)) : .integer(-value)
            case .real(let value): return .real(-value)
            default: return .null
            }
        case .coalesce(let lhs, let rhs):
            let left = lhs.evaluate(row)
            return left == .null ? rhs.evaluate(row) : left
        case .conditional(let test, let whenTrue, let whenFalse):
            return Self.truth(test.evaluate(row)) == true ? whenTrue.evaluate(row) : whenFalse.evaluate(row)
        case .contains(let text, let part):
            guard let text = Self.bytes(text.evaluate(row)), let part = Self.bytes(part.evaluate(row)) else { return .null }
            return .integer(Self.find(part, in: text) == nil ? 0 : 1)
        case .startsWith(let text, let prefix):
            guard let text = Self.bytes(text.evaluate(row)), let prefix = Self.bytes(prefix.evaluate(row)) else { return .null }
            return .integer(Self.find(prefix, in: text) == 0 ? 1 : 0)
        case .isIn(let element, let values):
            guard !values.isEmpty else { return .integer(0) }
            let value = element.evaluate(row)
            guard value != .null else { return .null }
            return .integer(values.contains { SQLValue.compare(value, $0) == .orderedSame } ? 1 : 0)
        }
    }

    /// The columns the expression reads.
    var columns: Set<Int> {
        switch self {
        case .column(let index): [index]
        case .value: []
        case .not(let operand), .negate(let operand), .isIn(let operand, _): operand.columns
        case .compare(_, let lhs, let rhs), .arithmetic(_, let lhs, let rhs): lhs.columns.union(rhs.columns)
        case .and(let lhs, let rhs), .or(let lhs, let rhs), .coalesce(let lhs, let rhs),
             .contains(let lhs, let rhs), .startsWith(let lhs, let rhs):
            lhs.columns.union(rhs.columns)
        case .conditional(let test, let whenTrue, let whenFalse): test.columns.union(whenTrue.columns).union(whenFalse.columns)
        }
    }

    // MARK: - SQL's rules

    /// Whether a value counts as true: nil for NULL; numbers are true when not zero.
    static func truth(_ value: SQLValue) -> Bool? {
        switch numeric(value) {
        case .integer(let number): number != 0
        case .real(let number): number != 0
        default: nil
        }
    }

    private static func compare(_ comparison: Comparison, _ left: SQLValue, _ right: SQLValue) -> SQLValue {
        switch comparison {
        case .equal, .notEqual:
            let same = left == .null || right == .null ? left == right : SQLValue.compare(left, right) == .orderedSame
            return .integer(same == (comparison == .equal) ? 1 : 0)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard left != .null, right != .null else { return .null }
            let order = SQLValue.compare(left, right)
            let holds = switch comparison {
            case .less: order == .orderedAscending
            case .lessOrEqual: order != .orderedDescending
            case .greater: order == .orderedDescending
            default: order != .orderedAscending
            }
            return .integer(holds ? 1 : 0)
        }
    }

    private static func arithmetic(_ operation: Arithmetic, _ left: SQLValue, _ right: SQLValue) -> SQLValue {
        if operation == .realDivide {
            guard let dividend = real(left), let divisor = real(right), divisor != 0 else { return .null }
            return realResult(dividend / divisor)
        }
        switch (numeric(left), numeric(right)) {
        case (.integer(let x), .integer(let y)):
            switch operation {
            case .add:
                let (sum, overflow) = x.addingReportingOverflow(y)
                return overflow ? realResult(Double(x) + Double(y)) : .integer(sum)
            case .subtract:
                let (difference, overflow) = x.subtractingReportingOverflow(y)
                return overflow ? realResult(Double(x) - Double(y)) : .integer(difference)
            case .multiply:
                let (product, overflow) = x.multipliedReportingOverflow(by: y)
                return overflow ? realResult(Double(x) * Double(y)) : .integer(product)
            case .divide:
                guard y != 0 else { return .null }
                return x == .min && y == -1 ? .real(-Double(x)) : .integer(x / y)
            case .remainder:
                guard y != 0 else { return .null }
                return y == -1 ? .integer(0) : .integer(x % y)
            case .realDivide:
                preconditionFailure("handled above")
            }
        case (.null, _), (_, .null):
            return .null
        case (let leftNumber, let rightNumber):
            if operation == .remainder {
                // SQLite takes both sides as integers (a real truncated and clamped, text by
                // its whole-number prefix) and answers a real.
                guard let a = integer(left), let b = integer(right), b != 0 else { return .null }
                return .real(b == -1 ? 0 : Double(a % b))
            }
            guard let x = real(leftNumber), let y = real(rightNumber) else { return .null }
            switch operation {
            case .add: return realResult(x + y)
            case .subtract: return realResult(x - y)
            case .multiply: return realResult(x * y)
            case .divide, .realDivide: return y == 0 ? .null : realResult(x / y)
            case .remainder: preconditionFailure("handled above")
            }
        }
    }

    /// A number as SQL takes it: text and bytes that spell a number are that number.
    private static func numeric(_ value: SQLValue) -> SQLValue {
        switch value {
        case .null, .integer, .real: return value.nanAsNull
        case .text(let text): return number(in: text)
        case .blob(let bytes): return number(in: String(decoding: bytes, as: UTF8.self))
        }
    }

    /// The number text begins with, as SQLite reads it: ASCII blanks, a sign, digits, a
    /// fraction and an exponent; the rest is ignored, and text that begins with no number is 0.
    /// A whole number that fits is an integer; anything else a real.
    private static func number(in text: String) -> SQLValue {
        let bytes = Array(text.utf8)
        var index = 0
        func skipDigits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }
        while index < bytes.count, isBlank(bytes[index]) { index += 1 }
        let start = index
        if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
        var digits = skipDigits()
        var isInteger = true
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            digits += skipDigits()
            isInteger = false
        }
        guard digits > 0 else { return .integer(0) }
        var end = index
        if index < bytes.count, bytes[index] == 0x65 || bytes[index] == 0x45 {
            index += 1
            if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
            if skipDigits() > 0 {
                end = index
                isInteger = false
            }
        }
        let prefix = String(decoding: bytes[start..<end], as: UTF8.self)
        if isInteger, let integer = Int64(prefix) { return .integer(integer) }
        return Double(prefix).map { .real($0) } ?? .integer(0)
    }

    private static func real(_ value: SQLValue) -> Double? {
        switch numeric(value) {
        case .integer(let number): Double(number)
        case .real(let number): number
        default: nil
        }
    }

    /// A number as an integer, as SQLite converts one: a real truncated and clamped to Int64's
    /// range, text and bytes by the whole number they begin with (`' -3.5e2x'` is -3, not
    /// -350); nil for NULL.
    private static func integer(_ value: SQLValue) -> Int64? {
        switch value {
        case .text(let text): return integerPrefix(of: Array(text.utf8))
        case .blob(let bytes): return integerPrefix(of: Array(bytes))
        default: break
        }
        switch numeric(value) {
        case .integer(let number): return number
        case .real(let number):
            if number >= 9.223372036854775807e18 { return .max }
            if number <= -9.223372036854775808e18 { return .min }
            return Int64(number)
        default: return nil
        }
    }

    /// The whole number UTF-8 text begins with: ASCII blanks, a sign and digits, clamped to
    /// Int64's range; 0 for none.
    private static func integerPrefix(of bytes: [UInt8]) -> Int64 {
        var index = bytes.firstIndex { !isBlank($0) } ?? bytes.count
        let isNegative = index < bytes.count && bytes[index] == 0x2D
        if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
        var magnitude: UInt64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(bytes[index] - 0x30))
            guard !overflow, !carry else { return isNegative ? .min : .max }
            magnitude = sum
            index += 1
        }
        if isNegative { return magnitude > UInt64(Int64.max) ? .min : -Int64(magnitude) }
        return magnitude > UInt64(Int64.max) ? .max : Int64(magnitude)
    }

    /// Whether a byte is one of the ASCII blanks SQLite skips before a number.
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func realResult(_ value: Double) -> SQLValue {
        value.isNaN ? .null : .real(value)
    }

    /// The UTF-8 bytes of text (numbers as SQL spells them); nil for NULL.
    private static func bytes(_ value: SQLValue) -> [UInt8]? {
        switch value {
        case .null: nil
        case .text(let text): Array(text.utf8)
        case .blob(let bytes): Array(bytes)
        case .integer(let number): Array(String(number).utf8)
        case .real(let number): Array(String(number).utf8)
        }
    }

    /// The first offset of `part` in `text`.
    private static func find(_ part: [UInt8], in text: [UInt8]) -> Int? {
        guard part.count <= text.count else { return nil }
        guard !part.isEmpty else { return 0 }
        for start in 0...(text.count - part.count) where text[start] == part[0] {
            if text[start..<(start + part.count)].elementsEqual(part) { return start }
        }
        return nil
    }
}
