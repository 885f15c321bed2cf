import Foundation

/// Splits SQL text into its statements as PostgreSQL (and psql) reads them, without sending
/// anything: a semicolon ends a statement only outside strings (`'...'`, `E'...'`), quoted
/// names (`"..."`), dollar-quoted bodies (`$$ ... $$`, `$fn$ ... $fn$`), comments (`--`,
/// nested `/* */`), parentheses, and the `BEGIN ATOMIC ... END` body of a `CREATE FUNCTION` or
/// `CREATE PROCEDURE` (where `BEGIN` and `CASE` open a block that `END` closes, as psql counts
/// them). Statements that hold only comments are left out.
///
/// ```swift
/// PostgreSQLText.statements(in: "CREATE TABLE t (x int); -- done")   // ["CREATE TABLE t (x int);"]
/// ```
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-syntax-lexical.html>
enum PostgreSQLText {
    static func statements(in sql: String) -> [String] {
        var statements: [String] = []
        let text = Array(sql.unicodeScalars)
        var start = 0
        var index = 0
        var hasCode = false
        var parentheses = 0
        // The statement's words so far (uppercased), and the blocks open in a routine's body.
        var words: [String] = []
        var blocks = 0
        func finish(upTo end: Int) {
            if hasCode {
                var statement = String.UnicodeScalarView()
                statement.append(contentsOf: text[start..<end])
                statements.append(String(statement).trimmingCharacters(in: .whitespacesAndNewlines))
            }
            start = end
            hasCode = false
            words = []
        }
        func starts(with prefix: String, at position: Int) -> Bool {
            let scalars = Array(prefix.unicodeScalars)
            return position + scalars.count <= text.count && Array(text[position..<position + scalars.count]) == scalars
        }
        while index < text.count {
            let scalar = text[index]
            if starts(with: "--", at: index) {
                while index < text.count, text[index] != "\n" { index += 1 }
                continue
            }
            if starts(with: "/*", at: index) {
                var depth = 0
                repeat {
                    if starts(with: "/*", at: index) {
                        depth += 1
                        index += 2
                    } else if starts(with: "*/", at: index) {
                        depth -= 1
                        index += 2
                    } else {
                        index += 1
                    }
                } while depth > 0 && index < text.count
                continue
            }
            if scalar == ";", parentheses == 0, blocks == 0 {
                finish(upTo: index + 1)
                index += 1
                continue
            }
            if !scalar.properties.isWhitespace { hasCode = true }
            if scalar == "(" { parentheses += 1 }
            if scalar == ")" { parentheses = max(0, parentheses - 1) }
            if isNameStart(scalar), index == 0 || !isNamePart(text[index - 1]) {
                var end = index
                while end < text.count, isNamePart(text[end]), text[end] != "$" { end += 1 }
                var word = String.UnicodeScalarView()
                word.append(contentsOf: text[index..<end])
                let upper = String(word).uppercased()
                words.append(upper)
                if isRoutine(words) {
                    if upper == "BEGIN" || upper == "CASE" { blocks += 1 }
                    if upper == "END", blocks > 0 { blocks -= 1 }
                }
                index = end
                continue
            }
            if scalar == "'" {
                // E'...' also escapes with a backslash.
                let escapes = index > 0 && (text[index - 1] == "E" || text[index - 1] == "e") && (index < 2 || !isNamePart(text[index - 2]))
                index += 1
                while index < text.count {
                    if escapes, text[index] == "\\" {
                        index += 2
                    } else if text[index] == "'" {
                        index += 1
                        if index < text.count, text[index] == "'" { index += 1 } else { break }
                    } else {
                        index += 1
                    }
                }
                continue
            }
            if scalar == "\"" {
                index += 1
                while index < text.count {
                    if text[index] == "\"" {
                        index += 1
                        if index < text.count, text[index] == "\"" { index += 1 } else { break }
                    } else {
                        index += 1
                    }
                }
                continue
            }
            if scalar == "$", index == 0 || !isNamePart(text[index - 1]), let tag = dollarTag(in: text, at: index) {
                // A dollar-quoted body runs to the same tag.
                index += tag.count
                while index < text.count, !(text[index] == "$" && Array(text[index..<min(text.count, index + tag.count)]) == tag) { index += 1 }
                index = min(text.count, index + tag.count)
                continue
            }
            index += 1
        }
        finish(upTo: text.count)
        return statements
    }

    /// The tag that opens a dollar-quoted body at `index` (`$$` or `$name$`), if one does.
    private static func dollarTag(in text: [Unicode.Scalar], at index: Int) -> [Unicode.Scalar]? {
        var end = index + 1
        while end < text.count, text[end] != "$" {
            guard isNamePart(text[end]), !(end == index + 1 && ("0"..."9").contains(text[end])) else { return nil }
            end += 1
        }
        guard end < text.count else { return nil }
        return Array(text[index...end])
    }

    /// Whether a statement's first words create a function or procedure.
    private static func isRoutine(_ words: [String]) -> Bool {
        guard words.first == "CREATE" else { return false }
        let rest = words.dropFirst().starts(with: ["OR", "REPLACE"]) ? words.dropFirst(3) : words.dropFirst()
        return rest.first == "FUNCTION" || rest.first == "PROCEDURE"
    }

    /// As PostgreSQL's lexer reads a name: ASCII letters and underscores, and any character
    /// past ASCII (a combining mark or `€` too), start one.
    private static func isNameStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || scalar == "_" || scalar.value >= 0x80
    }

    private static func isNamePart(_ scalar: Unicode.Scalar) -> Bool {
        isNameStart(scalar) || ("0"..."9").contains(scalar) || scalar == "$"
    }
}
