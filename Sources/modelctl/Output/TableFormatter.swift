import Foundation
import TrackedModels

/// Renders query results as an aligned table, a JSON array of objects, or CSV.
enum TableFormatter {
    static func table(_ result: DatabaseReader.Result) -> String {
        let cells = result.rows.map { $0.map(plain) }
        let widths = result.columns.indices.map { column in
            ([result.columns[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ values: [String]) -> String {
            zip(values, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces) + "\n"
        }
        return line(result.columns) + line(widths.map { String(repeating: "-", count: $0) }) + cells.map(line).joined()
    }

    static func json(_ result: DatabaseReader.Result) -> String {
        let objects = result.rows.map { row in
            "{" + zip(result.columns, row).map { "\(jsonString($0)): \(jsonValue($1))" }.joined(separator: ", ") + "}"
        }
        return "[" + objects.joined(separator: ",\n ") + "]"
    }

    static func csv(_ result: DatabaseReader.Result) -> String {
        func field(_ text: String) -> String {
            text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
        return ([result.columns] + result.rows.map { $0.map(plain) })
            .map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    /// A value as text, without quotes: `42`, `Row 42`, empty for NULL, base64 for a blob.
    static func plain(_ value: SQLValue) -> String {
        switch value {
        case .null: ""
        case .integer(let integer): String(integer)
        case .real(let real): String(real)
        case .text(let text): text
        case .blob(let data): data.base64EncodedString()
        }
    }

    /// A value as JSON: numbers, strings, null; blobs as base64 strings; non-finite reals as
    /// strings, which JSON numbers cannot hold.
    static func jsonValue(_ value: SQLValue) -> String {
        switch value {
        case .null: "null"
        case .integer(let integer): String(integer)
        case .real(let real): real.isFinite ? String(real) : jsonString(String(real))
        case .text(let text): jsonString(text)
        case .blob(let data): jsonString(data.base64EncodedString())
        }
    }

    static func jsonString(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}
