/// The SQLite storage a column holds, as declared in `CREATE TABLE`.
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html#type_affinity>
public enum ColumnType: String, Sendable, Hashable {
    case integer = "INTEGER"
    case real = "REAL"
    case text = "TEXT"
    case blob = "BLOB"

    /// The type affinity SQLite gives a declared column type, by its documented rules.
    static func affinity(ofDeclaredType declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return "INTEGER" }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return "TEXT" }
        if type.contains("BLOB") || type.isEmpty { return "BLOB" }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return "REAL" }
        return "NUMERIC"
    }

    /// Whether a table column with this declared type stores this column type faithfully.
    func isCompatible(withDeclaredType declared: String) -> Bool {
        switch (self, Self.affinity(ofDeclaredType: declared)) {
        case (.integer, "INTEGER"), (.integer, "NUMERIC"),
            (.real, "REAL"), (.real, "NUMERIC"),
            (.text, "TEXT"),
            (.blob, "BLOB"):
            true
        default:
            false
        }
    }
}
