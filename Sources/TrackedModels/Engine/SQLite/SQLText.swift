internal import CSQLite

/// Splits SQL text into its statements as SQLite reads them, without compiling anything: a
/// semicolon ends a statement only where `sqlite3_complete` says the statement is complete (not
/// inside a string, a comment, or a trigger's `BEGIN ... END`).
///
/// ```swift
/// SQLText.statements(in: "CREATE TABLE t (x); COMMIT;")   // ["CREATE TABLE t (x);", "COMMIT;"]
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/complete.html>
enum SQLText {
    static func statements(in sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for character in sql {
            current.append(character)
            if character == ";", sqlite3_complete(current) != 0 {
                statements.append(current.trimmingWhitespace)
                current = ""
            }
        }
        if !current.trimmingWhitespace.isEmpty { statements.append(current.trimmingWhitespace) }
        return statements
    }

    /// The first words of a statement, uppercased, skipping comments and punctuation between
    /// them: `["PRAGMA", "FOREIGN_KEYS"]` for `PRAGMA foreign_keys = OFF`.
    ///
    /// - Parameter nestedComments: Whether `/* */` comments nest (PostgreSQL's do, SQLite's
    ///   end at the first `*/`).
    static func leadingWords(of statement: String, count: Int, nestedComments: Bool = false) -> [String] {
        var words: [String] = []
        var rest = Substring(statement)
        while words.count < count, !rest.isEmpty {
            if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*") {
                rest = rest.dropFirst(2)
                var depth = 1
                while !rest.isEmpty, depth > 0 {
                    if rest.hasPrefix("*/") {
                        depth -= 1
                        rest = rest.dropFirst(2)
                    } else if nestedComments, rest.hasPrefix("/*") {
                        depth += 1
                        rest = rest.dropFirst(2)
                    } else {
                        rest = rest.dropFirst()
                    }
                }
            } else if rest.first!.isLetter || rest.first == "_" {
                let word = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                words.append(word.uppercased())
                rest = rest.dropFirst(word.count)
            } else {
                rest = rest.dropFirst()
            }
        }
        return words
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
