/// How the registrar reads rows it holds no object for, while it applies something: given by
/// the store, which reads through its engine.
struct RowReads {
    /// A row as committed; nil when the database has none.
    var committed: (RowReference) -> [SQLValue]?
    /// A row as the store shows it (committed, with its changes not yet committed); nil when
    /// there is none.
    var current: (RowReference) -> [SQLValue]?
}
