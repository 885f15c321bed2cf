/// An object's link to the store that manages it: generated storage of every tracked model.
///
/// The generated accessors report each read, and each assignment the program makes, here. A
/// detached object (not yet inserted, deleted, or whose store closed or went away) reports to
/// nobody: it still notifies `Observation` observers, but nothing is stored.
///
/// It holds the registrar strongly (the registrar holds objects weakly, so no cycle forms), and
/// when its object goes away it tells the registrar to forget the row's identity-map entry.
public final class ModelTracking {
    var registrar: ModelRegistrar?
    /// Where the object's table sits in the registrar.
    var table = 0
    /// The object's primary key while attached (`.null` while the database has yet to assign it).
    var key: SQLValue = .null
    /// The insert request of an object whose key the database has not assigned yet.
    var insertRequest: UInt64?

    public init() {}

    deinit {
        registrar?.objectWentAway(table: table, key: key)
    }

    /// Reports a read of a column (for dependency capture).
    public func access(column: Int) {
        registrar?.didAccess(table: table, key: key, column: column)
    }

    /// Reports the program's assignment of a new value to a column. Only the generated setter
    /// calls this.
    public func userDidSet<Value: ColumnValue>(_ object: some TrackedModel, column: Int, from oldValue: Value, to newValue: Value) {
        registrar?.userDidSet(object, tracking: self, column: column, from: oldValue.sqlValue, to: newValue.sqlValue)
    }

    var isAttached: Bool { registrar != nil }

    func attach(to registrar: ModelRegistrar, table: Int, key: SQLValue, insertRequest: UInt64? = nil) {
        self.registrar = registrar
        self.table = table
        self.key = key
        self.insertRequest = insertRequest
    }

    func detach() {
        registrar = nil
        insertRequest = nil
    }
}
