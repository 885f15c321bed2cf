/// An object's link to the store that manages it: generated storage of every tracked model.
///
/// The generated accessors report each read and write here. A detached object (not yet
/// inserted, deleted, or whose store closed or went away) reports to nobody: it still notifies
/// `Observation` observers, but nothing is stored.
///
/// It is a class so that the accessors reach it without copying; it holds the registrar
/// strongly, and the registrar clears that reference whenever it lets an object go (delete,
/// close, the store's deinit), so no cycle outlives the store.
public final class ModelTracking {
    var registrar: ModelRegistrar?
    /// Where the object's table sits in the registrar.
    var tableIndex = 0
    /// The object's primary key while attached.
    var rowKey: SQLValue = .null

    public init() {}

    /// Reports a read of a column (for dependency capture).
    public func access(column: Int) {
        registrar?.didAccess(tableIndex: tableIndex, rowKey: rowKey, column: column)
    }

    /// Reports a write that changed a column's value.
    public func didSet<Value: ColumnValue>(column: Int, from oldValue: Value, to newValue: Value) {
        registrar?.didSet(tableIndex: tableIndex, rowKey: rowKey, column: column, from: oldValue.sqlValue, to: newValue.sqlValue)
    }

    var isAttached: Bool { registrar != nil }
}
