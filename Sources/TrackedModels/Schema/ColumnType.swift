/// The kind of value a column stores: what its table must declare for it (in SQLite, a type
/// with the matching affinity).
public enum ColumnType: String, Sendable, Hashable {
    case integer = "INTEGER"
    case real = "REAL"
    case text = "TEXT"
    case blob = "BLOB"
}
