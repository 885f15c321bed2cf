import Foundation
import TrackedModels

/// Renders query results as an aligned table, a JSON array of objects, or CSV.
enum TableFormatter {
    static func table(_ result: DatabaseReader.Result) -> String {
        let cells = result.rows.map { $0.map { visible(plain($0), keepingLineBreaks: false) } }
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
        // Scalar by scalar: `"\u{301}` and `\r\n` are single characters that hold a quote and
        // line breaks.
        func field(_ text: String) -> String {
            guard text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
            var quoted = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                if scalar == "\"" { quoted.append("\"") }
                quoted.append(scalar)
            }
            return "\"" + String(quoted) + "\""
        }
        return ([result.columns] + result.rows.map { $0.map { visible(plain($0), keepingLineBreaks: true) } })
            .map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    /// Text with its control characters shown, never printed raw: NUL as `\0`, tabs and
    /// (outside CSV, whose quoting keeps them) line breaks as `\t`, `\n`, `\r`, others as
    /// `\u{NN}`.
    static func visible(_ text: String, keepingLineBreaks: Bool) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\0": shown += "\\0"
            case "\n" where keepingLineBreaks, "\r" where keepingLineBreaks: shown.unicodeScalars.append(scalar)
            case "\n": shown += "\\n"
            case "\r": shown += "\\r"
            case "\t": shown += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: shown += String(format: "\\u{%02x}", scalar.value)
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
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
