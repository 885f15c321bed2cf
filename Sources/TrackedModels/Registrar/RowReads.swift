/// How the registrar reads rows it holds no object for, while it applies something: given by
/// the store, which reads through its engine.
struct RowReads {
    /// A row as committed with this store's changes not yet committed laid over it (see
    /// ``UncommittedRow``); nil when there is none then, or where it could not be read now.
    var uncommitted: (RowReference) -> [SQLValue]?
    /// A row as the store shows it (committed, with its changes not yet committed); nil when
    /// there is none.
    var current: (RowReference) -> [SQLValue]?
}
