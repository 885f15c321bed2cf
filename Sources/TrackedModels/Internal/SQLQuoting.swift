/// Quotes an identifier for SQL: `rows` becomes `"rows"`, embedded quotes are doubled.
func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingScalar("\"", with: "\"\"") + "\""
}

/// Quotes text as an SQL string literal: `it's` becomes `'it''s'`.
func quoteLiteral(_ text: String) -> String {
    "'" + text.replacingScalar("'", with: "''") + "'"
}

extension String {
    /// The text with every `scalar` replaced by `replacement`, Unicode scalar by scalar.
    ///
    /// SQL and PostgreSQL's array literals quote by scalar, so escaping must too.
    /// `replacingOccurrences(of:with:)` compares characters: a quote that a combining mark
    /// follows (`"\u{301}`) is one `Character`, not `"`, and would be left unescaped.
    ///
    /// ```swift
    /// "\"\u{301}".replacingScalar("\"", with: "\"\"")   // "\"\"\u{301}"
    /// ```
    func replacingScalar(_ scalar: Unicode.Scalar, with replacement: String) -> String {
        guard unicodeScalars.contains(scalar) else { return self }
        var replaced = String.UnicodeScalarView()
        for each in unicodeScalars {
            if each == scalar { replaced.append(contentsOf: replacement.unicodeScalars) } else { replaced.append(each) }
        }
        return String(replaced)
    }
}
