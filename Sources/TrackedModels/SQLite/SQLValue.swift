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

extension SQLValue: CustomStringConvertible {
    /// A literal-like rendering, for messages and the command line (`42`, `'Row 42'`, `NULL`).
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let value): "x'" + value.map { String(format: "%02x", $0) }.joined() + "'"
        }
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
