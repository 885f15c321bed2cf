public import Foundation

/// A Swift type that a ``Tracked(table:)`` model can store in a column.
///
/// Built in: `Bool`, `Int`, `Int64`, `Int32`, `Double`, `String`, `Data`, `Date`, `UUID`, and
/// `Optional` of each. A `RawRepresentable` type whose raw value is one of those declares the
/// conformance and gets the implementation for free:
///
/// ```swift
/// enum Status: String, ColumnValue {
///     case open, closed
/// }
/// ```
///
/// How values are stored:
/// - `Bool` is an INTEGER 0 or 1; `Date` is a REAL, seconds since 1970-01-01 UTC (exact to the
///   microsecond); `UUID` is its lowercase TEXT form (a 16-byte BLOB reads too).
/// - `Double` stores infinities as they are; `-0.0` reads back as `0.0`. NaN cannot be stored: SQLite would turn it into NULL,
///   so the write-behind writer refuses it (``StoreError/Code/valueNotStorable``), the change
///   stays pending, and assigning a finite value resolves it.
public protocol ColumnValue: Equatable {
    /// The storage class of the column.
    static var columnType: ColumnType { get }
    /// Whether the column holds NULL for `nil`.
    static var isOptional: Bool { get }
    /// Decodes a stored value, throwing ``ValueDecodingError`` when it does not fit.
    init(sqlValue: SQLValue) throws
    /// The value to store.
    var sqlValue: SQLValue { get }
}

extension ColumnValue {
    public static var isOptional: Bool { false }
}

/// The generated setter's test: whether assigning `new` over `old` changes nothing stored. It
/// is `==`, but for the types whose `==` is coarser than what they store: text compares by
/// Unicode scalars ("é" and "e\u{301}" are stored differently), and every NaN is the same.
/// (`column` and `tracking` serve the overload for a to-one relationship.)
@inlinable public func _$isSameStoredValue<Value: ColumnValue>(_ old: Value, _ new: Value, column: Int, tracking: ModelTracking) -> Bool {
    old == new
}

@inlinable public func _$isSameStoredValue(_ old: String, _ new: String, column: Int, tracking: ModelTracking) -> Bool {
    old == new && old.utf8.elementsEqual(new.utf8)
}

@inlinable public func _$isSameStoredValue(_ old: String?, _ new: String?, column: Int, tracking: ModelTracking) -> Bool {
    switch (old, new) {
    case (nil, nil): true
    case (let old?, let new?): _$isSameStoredValue(old, new, column: column, tracking: tracking)
    default: false
    }
}

@inlinable public func _$isSameStoredValue(_ old: Double, _ new: Double, column: Int, tracking: ModelTracking) -> Bool {
    old == new || (old.isNaN && new.isNaN)
}

@inlinable public func _$isSameStoredValue(_ old: Double?, _ new: Double?, column: Int, tracking: ModelTracking) -> Bool {
    switch (old, new) {
    case (nil, nil): true
    case (let old?, let new?): _$isSameStoredValue(old, new, column: column, tracking: tracking)
    default: false
    }
}

/// A stored value that does not fit the Swift type it is read into.
public struct ValueDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The Swift type that was expected.
    public var expectedType: String
    /// What the database held.
    public var found: SQLValue

    public init(expectedType: String, found: SQLValue) {
        self.expectedType = expectedType
        self.found = found
    }

    public var description: String {
        "cannot read \(found.storageClass) value \(found) as \(expectedType)"
    }
}

extension ColumnValue {
    static func mismatch(_ value: SQLValue) -> ValueDecodingError {
        ValueDecodingError(expectedType: String(describing: Self.self), found: value)
    }
}

extension Int64: ColumnValue {
    public static var columnType: ColumnType { .integer }
    public init(sqlValue: SQLValue) throws {
        guard case .integer(let value) = sqlValue else { throw Self.mismatch(sqlValue) }
        self = value
    }
    public var sqlValue: SQLValue { .integer(self) }
}

extension Int: ColumnValue {
    public static var columnType: ColumnType { .integer }
    public init(sqlValue: SQLValue) throws {
        guard case .integer(let value) = sqlValue, let int = Int(exactly: value) else { throw Self.mismatch(sqlValue) }
        self = int
    }
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int32: ColumnValue {
    public static var columnType: ColumnType { .integer }
    public init(sqlValue: SQLValue) throws {
        guard case .integer(let value) = sqlValue, let int = Int32(exactly: value) else { throw Self.mismatch(sqlValue) }
        self = int
    }
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: ColumnValue {
    public static var columnType: ColumnType { .integer }
    public init(sqlValue: SQLValue) throws {
        guard case .integer(let value) = sqlValue else { throw Self.mismatch(sqlValue) }
        self = value != 0
    }
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Double: ColumnValue {
    public static var columnType: ColumnType { .real }
    public init(sqlValue: SQLValue) throws {
        switch sqlValue {
        case .real(let value): self = value
        // A REAL column of a table without STRICT may hand back an integral value as INTEGER.
        case .integer(let value): self = Double(value)
        default: throw Self.mismatch(sqlValue)
        }
    }
    public var sqlValue: SQLValue { .real(self) }
}

extension String: ColumnValue {
    public static var columnType: ColumnType { .text }
    public init(sqlValue: SQLValue) throws {
        guard case .text(let value) = sqlValue else { throw Self.mismatch(sqlValue) }
        self = value
    }
    public var sqlValue: SQLValue { .text(self) }
}

extension Data: ColumnValue {
    public static var columnType: ColumnType { .blob }
    public init(sqlValue: SQLValue) throws {
        guard case .blob(let value) = sqlValue else { throw Self.mismatch(sqlValue) }
        self = value
    }
    public var sqlValue: SQLValue { .blob(self) }
}

extension Date: ColumnValue {
    public static var columnType: ColumnType { .real }
    public init(sqlValue: SQLValue) throws {
        self = Date(timeIntervalSince1970: try Double(sqlValue: sqlValue))
    }
    public var sqlValue: SQLValue { .real(timeIntervalSince1970) }
}

extension UUID: ColumnValue {
    public static var columnType: ColumnType { .text }
    public init(sqlValue: SQLValue) throws {
        switch sqlValue {
        case .text(let text):
            guard let uuid = UUID(uuidString: text) else { throw Self.mismatch(sqlValue) }
            self = uuid
        case .blob(let data) where data.count == 16:
            self = UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
        default:
            throw Self.mismatch(sqlValue)
        }
    }
    public var sqlValue: SQLValue { .text(uuidString.lowercased()) }
}

extension Optional: ColumnValue where Wrapped: ColumnValue {
    public static var columnType: ColumnType { Wrapped.columnType }
    public static var isOptional: Bool { true }
    public init(sqlValue: SQLValue) throws {
        self = sqlValue == .null ? nil : try Wrapped(sqlValue: sqlValue)
    }
    public var sqlValue: SQLValue { map(\.sqlValue) ?? .null }
}

extension ColumnValue where Self: RawRepresentable, RawValue: ColumnValue {
    public static var columnType: ColumnType { RawValue.columnType }
    public init(sqlValue: SQLValue) throws {
        guard let value = Self(rawValue: try RawValue(sqlValue: sqlValue)) else { throw Self.mismatch(sqlValue) }
        self = value
    }
    public var sqlValue: SQLValue { rawValue.sqlValue }
}
