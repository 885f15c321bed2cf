import Foundation
import NIOCore
import PostgresNIO

/// How ``SQLValue``s cross to PostgreSQL and back.
///
/// Parameters go in text format with no type of their own, so that the server reads each one
/// as what its place in the statement calls for (an `INTEGER` column takes `42` as well as a
/// `BIGINT` does); where a statement gives a parameter no type, the dialect casts it. Results
/// come back by the type the server names: integers, reals and `numeric` as numbers, `boolean`
/// as 0 or 1 (as SQLite stores it), text types as text, `bytea` as bytes.
enum PostgresValues {
    /// The text a parameter sends: the value as PostgreSQL's text input reads it; nil for NULL.
    static func parameterText(_ value: SQLValue) -> String? {
        switch value {
        case .null: nil
        // As SQLite stores it, and as the evaluator reads a NaN: NULL.
        case .real(let real) where real.isNaN: nil
        case .integer(let integer): String(integer)
        // Swift writes the shortest text that reads back as the same Double.
        case .real(let real): real.isInfinite ? (real < 0 ? "-Infinity" : "Infinity") : "\(real)"
        case .text(let string): string
        case .blob(let data): "\\x" + data.map { String(format: "%02x", $0) }.joined()
        }
    }

    static func bindings(_ values: [SQLValue]) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            if let text = parameterText(value) { bindings.append(TextParameter(text: text)) } else { bindings.appendNull() }
        }
        return bindings
    }

    /// A parameter in text format with no type of its own: the server reads it as its place
    /// in the statement calls for.
    private struct TextParameter: PostgresDynamicTypeEncodable {
        var text: String
        var psqlType: PostgresDataType { .null }
        var psqlFormat: PostgresFormat { .text }

        func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
            byteBuffer.writeString(text)
        }
    }

    /// A row's cells as values.
    ///
    /// - Throws: ``StoreError/Code/decodingFailed`` for a cell of a type the store does not read.
    static func values(of row: PostgresRow) throws -> [SQLValue] {
        try row.map(value(of:))
    }

    static func value(of cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        do {
            switch cell.dataType {
            case .int2, .int4, .int8, .oid: return .integer(try cell.decode(Int64.self))
            case .float4, .float8: return .real(try cell.decode(Double.self))
            case .numeric:
                guard cell.format == .binary, let bytes = cell.bytes, let number = number(fromNumeric: bytes) else { throw DecodingError.notNumeric }
                return number
            case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
            case .bytea: return .blob(Data(try cell.decode(ByteBuffer.self).readableBytesView))
            default: return .text(try cell.decode(String.self))
            }
        } catch {
            throw StoreError(
                code: .decodingFailed,
                message: "column \(cell.columnName) holds a value of PostgreSQL type \(cell.dataType) that the store cannot read; declare it BIGINT, DOUBLE PRECISION, TEXT or BYTEA",
                underlying: error
            )
        }
    }
}

extension PostgresValues {
    /// A `numeric` in its binary form (a count of base-10,000 digits, the weight of the first,
    /// a sign, the scale, the digits) as the number it is: an integer when it is whole and fits
    /// 64 bits, else the nearest `Double` (read from its decimal text, so correctly rounded);
    /// NaN is NULL, as the store reads a NaN. Foundation's `Decimal` would lose digits and
    /// fail past an exponent of 127.
    static func number(fromNumeric bytes: ByteBuffer) -> SQLValue? {
        var bytes = bytes
        guard let count = bytes.readInteger(as: Int16.self), count >= 0, let weight = bytes.readInteger(as: Int16.self),
              let sign = bytes.readInteger(as: UInt16.self), bytes.readInteger(as: Int16.self) != nil else { return nil }
        switch sign {
        case 0x0000, 0x4000: break
        case 0xC000: return .null
        case 0xD000: return .real(.infinity)
        case 0xF000: return .real(-.infinity)
        default: return nil
        }
        var digits = ""
        for _ in 0..<count {
            guard let group = bytes.readInteger(as: Int16.self), (0..<10_000).contains(group) else { return nil }
            let text = String(group)
            digits += String(repeating: "0", count: 4 - text.count) + text
        }
        let negative = sign == 0x4000
        // The value is 0.DIGITS × 10^exponent.
        let exponent = (Int(weight) + 1) * 4
        let whole = exponent >= 0 && digits.dropFirst(exponent).allSatisfy { $0 == "0" }
        if whole, exponent <= 20 {
            let integerDigits = digits.prefix(exponent) + String(repeating: "0", count: max(0, exponent - digits.count))
            if let integer = Int64((negative ? "-" : "") + (integerDigits.isEmpty ? "0" : integerDigits)) { return .integer(integer) }
        }
        return Double((negative ? "-" : "") + "0." + (digits.isEmpty ? "0" : digits) + "e\(exponent)").map(SQLValue.real)
    }

    private enum DecodingError: Error {
        case notNumeric
    }

    /// Bytes from `bytea`'s text form (`\x0aff`); nil when the text is not that.
    static func bytes(fromHex text: String) -> Data? {
        guard text.hasPrefix("\\x"), text.count % 2 == 0 else { return nil }
        var data = Data(capacity: (text.count - 2) / 2)
        var index = text.index(text.startIndex, offsetBy: 2)
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            data.append(byte)
            index = next
        }
        return data
    }

    /// An array literal (`{1,"two",NULL}`) of values, for `= ANY($1)`: integers as they are,
    /// NULL (and a NaN) bare, every other element quoted, with its quotes and backslashes
    /// escaped, so that any text survives.
    static func arrayLiteral(_ values: [SQLValue]) -> SQLValue {
        // Written into one string: a watcher sends one of these for every look that found rows.
        var literal = "{"
        literal.reserveCapacity(2 + values.count * 8)
        for (index, value) in values.enumerated() {
            if index > 0 { literal.append(",") }
            switch value {
            case .integer(let integer):
                literal.append(String(integer))
            default:
                // Each element as a parameter sends it: a NaN is NULL, an infinity `Infinity`.
                guard let text = parameterText(value) else {
                    literal.append("NULL")
                    continue
                }
                literal.append("\"")
                literal.append(text.replacingScalar("\\", with: "\\\\").replacingScalar("\"", with: "\\\""))
                literal.append("\"")
            }
        }
        literal.append("}")
        return .text(literal)
    }
}
