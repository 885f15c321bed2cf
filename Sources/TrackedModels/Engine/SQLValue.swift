public import Foundation

/// A value as SQLite stores it: one of its five storage classes.
///
/// `SQLValue` is what crosses between the store, the write-behind writer and the change feeds:
/// it is `Sendable`, `Hashable`, and independent of any model type.
///
/// For example:
///
/// ```swift
/// let values: [SQLValue] = [.integer(42), .text("Row 42"), .null]
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html>
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// The storage class of the value, as SQLite's `typeof()` names it.
    public var storageClass: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

extension SQLValue {
    /// Whether two values are the same stored value: text by Unicode scalars (SQLite's BINARY
    /// comparison, not Swift's canonical equivalence, under which "é" and "e\u{301}" are
    /// equal), and reals by value, with every NaN the same.
    public static func == (a: SQLValue, b: SQLValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.integer(let x), .integer(let y)): x == y
        case (.real(let x), .real(let y)): x == y || (x.isNaN && y.isNaN)
        // Texts that are not canonically equivalent differ; those that are may still differ.
        case (.text(let x), .text(let y)): x == y && x.utf8.elementsEqual(y.utf8)
        case (.blob(let x), .blob(let y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let value): hasher.combine(value)
        case .real(let value): hasher.combine(value.isNaN ? Double.nan.bitPattern : (value == 0 ? 0 : value).bitPattern)
        // Equal texts are canonically equivalent, so String's hash agrees with ==.
        case .text(let value): hasher.combine(value)
        case .blob(let value): hasher.combine(value)
        }
    }
}

extension SQLValue: CustomStringConvertible {
    /// A literal-like rendering, for messages and the command line (`42`, `'Row 42'`, `NULL`).
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + Self.escaped(value) + "'"
        case .blob(let value): "x'" + value.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}

extension SQLValue {
    /// Text for a message: quotes doubled, and control characters (a NUL would end the line
    /// where a terminal or log reads it) written as `\u{0}`.
    private static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x27: result += "''"
            case 0..<0x20, 0x7F...0x9F: result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

extension SQLValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}
