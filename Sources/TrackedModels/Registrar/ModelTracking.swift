/// An object's link to the store that manages it: generated storage of every tracked model.
///
/// The generated accessors report each read, and each assignment the program makes, here. A
/// detached object (not yet inserted, deleted, or whose store closed or went away) reports to
/// nobody: it still notifies `Observation` observers, but nothing is stored.
///
/// When its object goes away it tells the registrar to forget the row's identity-map entry.
public final class ModelTracking {
    /// The registrar while the object is attached, unretained, so that the hot path of every
    /// assignment pays no reference counting.
    ///
    /// That is safe because the store owns its registrar, and before the registrar can go away
    /// (the store's `close()` or deinit) `ModelRegistrar.detachAll()` clears this on every
    /// attached object. It reaches them all: an attached object is in the identity map (held
    /// weakly, so a live object is found) or among the inserts waiting for a key.
    private var unretainedRegistrar: Unmanaged<ModelRegistrar>?

    var registrar: ModelRegistrar? {
        unretainedRegistrar?.takeUnretainedValue()
    }
    /// Where the object's table sits in the registrar.
    var table = 0
    /// The object's primary key while attached (`.null` while the database has yet to assign it).
    var key: SQLValue = .null
    /// The insert request of an object whose key the database has not assigned yet.
    var insertRequest: UInt64?
    /// The key reads name the object's row by: its key, or its key's placeholder while the
    /// database has yet to assign it (its temporary identity).
    var rowKey: SQLValue { insertRequest.map(KeyPlaceholder.value(forInsert:)) ?? key }
    /// Where the row's last write went, so that the next one skips the lookup.
    // Unchecked exclusivity: only `PendingChanges.write` accesses it, once per write, and
    // nothing it calls reaches this object.
    @exclusivity(unchecked) var pendingUnit = PendingChanges.UnitHint()
    /// The keys that the object's to-one relationships hold, by column, once known (empty for
    /// a model without relationships).
    var foreignKeys: [Int: SQLValue] = [:]
    /// Whether the store took the children the object's to-many relationships were given
    /// before it was stored: they are the store's rows since, and a later insert of the object
    /// (after it was deleted, say) does not insert them again.
    var handedOverChildren = false

    public init() {}

    deinit {
        registrar?.objectWentAway(table: table, key: key)
    }

    /// Takes the keys of the to-one relationships of a row read from the database. Only the
    /// generated initializer calls this.
    public func adoptForeignKeys(from row: ModelRow) {
        for column in row.schema.relationshipColumns { foreignKeys[column] = row.values[column] }
    }

    /// Reports a read of a column (for dependency capture).
    public func access(column: Int) {
        registrar?.didAccess(table: table, key: key, column: column)
    }

    /// Reports the program's assignment of a new value to a column. Only the generated setter
    /// calls this.
    ///
    /// Inlinable, so that the values' conversion is specialized in the model's module.
    @inlinable
    public func userDidSet<Value: ColumnValue>(_ object: some TrackedModel, column: Int, from oldValue: Value, to newValue: Value) {
        reportSet(object, column: column, from: oldValue.sqlValue, to: newValue.sqlValue)
    }

    @usableFromInline
    func reportSet(_ object: any TrackedModel, column: Int, from oldValue: SQLValue, to newValue: SQLValue) {
        unretainedRegistrar?._withUnsafeGuaranteedRef {
            $0.userDidSet(object, tracking: self, column: column, from: oldValue, to: newValue)
        }
    }

    var isAttached: Bool { registrar != nil }

    func attach(to registrar: ModelRegistrar, table: Int, key: SQLValue, insertRequest: UInt64? = nil) {
        unretainedRegistrar = Unmanaged.passUnretained(registrar)
        self.table = table
        self.key = key
        self.insertRequest = insertRequest
    }

    func detach() {
        unretainedRegistrar = nil
        insertRequest = nil
    }
}
