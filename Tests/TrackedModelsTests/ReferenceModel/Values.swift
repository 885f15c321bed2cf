import Foundation
import PropertyBased
import TrackedModels

/// Values of every kind a column of ``Item`` can hold, decoded from one generated number: 0 is
/// the simplest value, and the others reach the edges (extreme integers, NaN and infinities,
/// NUL, combining marks and any Unicode scalar, empty and arbitrary bytes).
enum Values {
    static func value(for column: Item.Column, seed: UInt64) -> SQLValue {
        var random = Xoshiro(seed: seed)
        switch column {
        case .id: return .integer(key(seed: seed))
        case .title: return .text(string(seed: seed))
        case .count: return .integer(seed == 0 ? 0 : integer(&random))
        case .note: return seed % 4 == 1 ? .null : .text(string(seed: seed / 4))
        case .score: return .real(seed == 0 ? 0 : double(&random))
        case .payload: return seed % 4 == 1 ? .null : .blob(data(seed: seed / 4))
        case .flag: return .integer(Int64(seed % 2))
        case .link: return seed % 3 == 0 ? .null : .integer(key(seed: seed / 3))
        }
    }

    /// A whole row's values (the key and the link left NULL), each column from its own part of
    /// the seed.
    static func row(seed: UInt64) -> [SQLValue] {
        var random = Xoshiro(seed: seed)
        return Item.Column.allCases.map { column in
            // A new item points at nothing: the program relates it by assigning an object.
            column == .id || column == .link ? .null : value(for: column, seed: seed == 0 ? 0 : random.next() % 1_000_000)
        }
    }

    /// A key: small keys mostly, so that programs meet the same rows again, and now and then an
    /// extreme one.
    static func key(seed: UInt64) -> Int64 {
        switch seed % 16 {
        case 15: return [Int64.max, Int64.min, -1, 0, Int64.max - 1][Int(seed / 16 % 5)]
        default: return Int64(seed % 40)
        }
    }

    static func integer(_ random: inout Xoshiro) -> Int64 {
        switch random.next() % 8 {
        case 0: return [Int64.max, Int64.min, Int64.max - 1, Int64.min + 1, 13, -1][Int(random.next() % 6)]
        case 1: return Int64(bitPattern: random.next())
        case 2: return 13  // the value the CHECK constraint refuses
        default: return Int64(random.next() % 200) - 100
        }
    }

    static func double(_ random: inout Xoshiro) -> Double {
        switch random.next() % 10 {
        case 0: return [.nan, .infinity, -.infinity, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude][Int(random.next() % 7)]
        case 1: return Double(bitPattern: random.next())
        case 2: return Double(Int64(random.next() % 100))
        default: return Double(Int64(random.next() % 20_000) - 10_000) / 64
        }
    }

    static func string(seed: UInt64) -> String {
        guard seed != 0 else { return "" }
        var random = Xoshiro(seed: seed)
        let count = Int(random.next() % 8) + 1
        var scalars = String.UnicodeScalarView()
        for _ in 0..<count {
            let value: UInt32 = switch random.next() % 8 {
            case 0: [0x0, 0x301, 0xE9, 0x65, 0x1F600, 0xFFFF, 0x10FFFF, 0xFEFF, 0x7F, 0x20][Int(random.next() % 10)]
            case 1: UInt32(random.next() % 0x11_0000)
            case 2: UInt32(random.next() % 0x800)
            default: UInt32(0x41 + random.next() % 58)  // letters, either case, and a few signs
            }
            scalars.append(Unicode.Scalar(value) ?? "?")
        }
        return String(scalars)
    }

    static func data(seed: UInt64) -> Data {
        guard seed != 0 else { return Data() }
        var random = Xoshiro(seed: seed)
        return Data((0..<Int(random.next() % 9)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    // MARK: - Comparing as SQLite does

    /// Whether two values are the same stored value: text by Unicode scalars (not by Swift's
    /// canonical equivalence), numbers by value (an integral REAL may come back as INTEGER from a
    /// NUMERIC column; -0.0 comes back as 0.0), every NaN the same.
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.text(let x), .text(let y)): x.unicodeScalars.elementsEqual(y.unicodeScalars)
        case (.blob(let x), .blob(let y)): x == y
        case (.real(let x), .real(let y)) where x.isNaN || y.isNaN: x.isNaN && y.isNaN
        // PostgreSQL's NUMERIC keeps a whole real as its shortest decimal, which reads back as
        // an integer that is the same double, not the double's exact value.
        case (.integer(let integer), .real(let real)) where Double(integer) == real: true
        case (.real(let real), .integer(let integer)) where Double(integer) == real: true
        case (.integer, _), (.real, _): compare(a, b) == 0 && b.isNumber
        default: false
        }
    }

    static func same(_ a: [SQLValue]?, _ b: [SQLValue]?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        default: false
        }
    }

    /// SQLite's order of values under the BINARY collation: NULL, numbers by value, text by
    /// UTF-8 bytes, blobs by bytes.
    static func compare(_ a: SQLValue, _ b: SQLValue) -> Int {
        func rank(_ value: SQLValue) -> Int {
            switch value {
            case .null: 0
            case .integer, .real: 1
            case .text: 2
            case .blob: 3
            }
        }
        func bytes<C: Collection<UInt8>>(_ x: C, _ y: C) -> Int {
            for (l, r) in zip(x, y) where l != r { return l < r ? -1 : 1 }
            return x.count == y.count ? 0 : x.count < y.count ? -1 : 1
        }
        // A NaN (pending only) orders and matches as NULL, which SQLite would store for it.
        func nanAsNull(_ value: SQLValue) -> SQLValue {
            if case .real(let real) = value, real.isNaN { .null } else { value }
        }
        switch (nanAsNull(a), nanAsNull(b)) {
        case (.integer(let x), .integer(let y)): return x == y ? 0 : x < y ? -1 : 1
        case (.integer(let x), .real(let y)): return -compareReal(y, x)
        case (.real(let x), .integer(let y)): return compareReal(x, y)
        case (.real(let x), .real(let y)): return x == y ? 0 : x < y ? -1 : 1
        case (.text(let x), .text(let y)): return bytes(Array(x.utf8), Array(y.utf8))
        case (.blob(let x), .blob(let y)): return bytes(Array(x), Array(y))
        case (let a, let b): return rank(a) == rank(b) ? 0 : rank(a) < rank(b) ? -1 : 1
        }
    }

    /// A REAL against an INTEGER, exactly (as SQLite compares them).
    private static func compareReal(_ real: Double, _ integer: Int64) -> Int {
        if real < -9.223372036854775808e18 { return -1 }
        if real >= 9.223372036854775808e18 { return 1 }
        let truncated = Int64(real.rounded(.towardZero))
        if truncated != integer { return truncated < integer ? -1 : 1 }
        let fraction = real - real.rounded(.towardZero)
        return fraction == 0 ? 0 : fraction < 0 ? -1 : 1
    }
}

extension SQLValue {
    var isNaN: Bool {
        if case .real(let real) = self { real.isNaN } else { false }
    }

    var isNumber: Bool {
        switch self {
        case .integer, .real: true
        default: false
        }
    }

    var describedExactly: String {
        switch self {
        case .text(let text): "'\(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined())'"
        default: description
        }
    }
}
