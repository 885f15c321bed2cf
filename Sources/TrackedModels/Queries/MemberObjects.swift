/// The objects a live form hands out for the rows it holds (its members), by key: each made
/// once, when first read, and kept while its row is a member.
///
/// ```swift
/// let objects = MemberObjects<Row>(store: store, plan: plan, describedAs: "a live list of Row")
/// objects.keep(key, values: values)    // a member's values at hand (a server's, a pending insert's)
/// let row = objects.object(for: key)   // made from the row as this store shows it
/// objects.forget(key)                  // the row left
/// ```
///
/// A class, shared by a form and its parts (the sections of ``SectionedResults``).
final class MemberObjects<Model: TrackedModel> {
    private let store: ModelStore
    private let plan: CompiledQuery
    /// Objects handed out or kept, only for members.
    private var objects: [SQLValue: Model] = [:]
    /// What the form is, in a report on `writeErrors` ("a live list of Row").
    private let name: String

    init(store: ModelStore, plan: CompiledQuery, describedAs name: String) {
        self.store = store
        self.plan = plan
        self.name = name
    }

    /// The object of a member's row: the one kept, or one made now from the row as this store
    /// shows it.
    func object(for key: SQLValue) -> Model {
        if let object = objects[key] {
            if object._$tracking.isAttached, object._$tracking.rowKey != key {
                // Deleted and inserted again under another key: it is another row's now.
                objects[key] = nil
            } else if object._$tracking.isAttached || store.isClosed || !replace(detached: object, key: key) {
                return object
            }
        }
        // A row waiting for its key is kept as its object from the start (see keep).
        precondition(KeyPlaceholder.request(in: key) == nil, "row \(key) of \(plan.schema.name) waits for its key but its object was not kept")
        // A member's row exists: its object is alive, or its committed values are readable.
        let values: [SQLValue]
        var isGone = false
        do {
            let row = RowReference(table: plan.table, key: key)
            if let current = try store.reads.now(store.reads.current(row)) {
                values = current
            } else if let deleted = store.registrar.objectDeleted(inTransaction: row) as? Model {
                // Deleted by the open transaction, whose events the form takes at its end:
                // the element is the row's object, detached, as it was then.
                objects[key] = deleted
                return deleted
            } else if let committed = try store.reads.now(store.reads.committed(row)) {
                // Deleted by this store, in a delivery whose event the form has yet to take:
                // the element shows the row as committed, detached.
                values = committed
                isGone = true
            } else {
                preconditionFailure("row \(key) of \(plan.schema.name) is in the results but no longer in the database (another process deleted it moments ago); call store.refreshExternalChanges() before reading results where other processes delete rows")
            }
        } catch {
            preconditionFailure("cannot read row \(key) of \(plan.schema.name) for the results: \(error); the database could not be read (see the error), so the element cannot be made")
        }
        // After the store closed, objects are detached: one made now must be too, or its writes
        // would be recorded by a store that never commits again.
        let object = store.isClosed || isGone
            ? try? Model(_$row: ModelRow(schema: plan.schema, values: values))
            : try? store.object(Model.self, table: plan.table, values: values)
        guard let object else { preconditionFailure("cannot decode row \(key) of \(plan.schema.name)") }
        objects[key] = object
        return object
    }

    /// Makes a member's object now, from values at hand, where reading its row later would be
    /// a round trip to await; where reads are answered at once, objects are made when first
    /// read. A row waiting for its key is its insert's object, kept at once: the store lets go
    /// of it when the insert is taken back, before the form hears.
    func keep(_ key: SQLValue, values: [SQLValue]) {
        guard store.reads.mustAwait || KeyPlaceholder.request(in: key) != nil, objects[key] == nil, !store.isClosed else { return }
        let width = plan.schema.columns.count
        objects[key] = try? store.object(Model.self, table: plan.table, values: values.count == width ? values : Array(values.prefix(width)))
    }

    /// The row is no longer a member.
    func forget(_ key: SQLValue) {
        objects[key] = nil
    }

    /// Forgets the objects of rows that are no longer members (after every row was replaced).
    func keepOnly(where isMember: (SQLValue) -> Bool) {
        objects = objects.filter { isMember($0.key) }
    }

    /// A stored key as the model's key type (nil for an insert's key's placeholder); members'
    /// keys came from the model's own rows.
    static func typedKey(_ key: SQLValue) -> Model.PrimaryKeyValue? {
        guard KeyPlaceholder.request(in: key) == nil else { return nil }
        guard let typed = try? Model.PrimaryKeyValue(sqlValue: key) else {
            preconditionFailure("key \(key) of \(Model._$schema.name) does not decode as \(Model.PrimaryKeyValue.self)")
        }
        return typed
    }

    /// Whether an object is kept for a row; for tests.
    func holds(_ key: SQLValue) -> Bool { objects[key] != nil }

    /// Drops a member's object that no longer manages the row (another connection deleted the
    /// row and inserted it again, which subscribers may hear as no change at all): true when
    /// the row's object can be made now; where the row must be awaited, it is read and kept
    /// for later reads, and the old object is shown meanwhile.
    private func replace(detached object: Model, key: SQLValue) -> Bool {
        let read = store.reads.current(RowReference(table: plan.table, key: key))
        switch try? store.reads.atOnce(read) {
        case .some(.some):
            objects[key] = nil
            return true
        case .some(.none):
            // Gone for this store (it deleted the row; the form has yet to hear): the object
            // shows the row as it was.
            return false
        case .none:
            break
        }
        store.reads.later(read, then: { [weak self] values in
            // Still a member, showing the same object: only members' objects are kept.
            guard let self, let values, objects[key] === object else { return }
            objects[key] = nil
            keep(key, values: values)
        }, failed: { [weak self] error in
            guard let self else { return }
            store.writeBehind.errors.reportFailedRead(error, "\(name) could not read row \(key) again; the object it shows for it shows the row as it was: fetch it again")
        })
        return false
    }
}
