/// What a live form keeps of a query's matching rows (a list, sections, an aggregate): told by
/// its ``LiveQuery`` of each row that enters, changes or leaves, and when a burst ends.
protocol LiveQueryForm: AnyObject {
    /// A row now matches, with `values` (a row of the query), or, for nil, no longer does (or
    /// is gone).
    func place(_ key: SQLValue, values: [SQLValue]?)
    /// Every row the query matches, in the query's order, in place of what was held: at a
    /// reset, and when a transaction the form was made in ends.
    func replaceAll(with matching: [[SQLValue]])
    /// The burst of changes has been delivered: the form tells its observers the net change.
    func publish()
}

/// Keeps a live form current with a compiled query's matching rows, one row at a time: the one
/// owner of which changes a live form hears and how it reads the rows they concern.
///
/// A change to a column the query reads re-evaluates that row, by its values as this store
/// shows them; a change to a row a to-one relationship points at re-evaluates the rows that
/// point at it (one read of them once the delivery ends, for every target changed in it, before
/// any live form publishes). Rows whose key the database has yet to assign, and rows that
/// reach one, are judged again as their insert changes. A reset reads every matching row again,
/// and so does the end of a transaction the form was made in. Where a read must be awaited (a
/// server's), it is made later and its rows placed when it comes back; a read that fails leaves
/// the form stale (``isStale``), said once on `writeErrors`, until its next change reads every
/// row again.
///
/// ```swift
/// let query = LiveQuery<FetchedResults<Row>>(store: store, plan: plan, describedAs: "a live list of Row")
/// results.replaceAll(with: matching)
/// query.start(form: results)        // from now on, results.place(_:values:) and publish()
/// ```
final class LiveQuery<Form: LiveQueryForm> {
    let plan: CompiledQuery
    private let store: ModelStore
    private weak var form: Form?
    /// What the form is, in a report on `writeErrors` ("a live list of Row").
    private let name: String
    private var subscriptions: [FeedToken] = []
    /// A read placed later failed (the server refused the query, say for an overflow the rows
    /// cause, or the connection was lost): what the form holds may be out of date. The next
    /// change it hears is applied, then every matching row is read again, as a reset does.
    private(set) var isStale = false
    /// Reloads started: a read that fails once a later reload has started tells nothing new.
    private var reloads = 0
    private var isPublishScheduled = false
    /// The targets of each join (by its index in the plan) that changed in the delivery under
    /// way: the rows pointing at them are read together once it ends, not once per target (a
    /// transaction that inserts a thousand targets makes two reads, not a thousand).
    private var changedTargets: [Int: Set<SQLValue>] = [:]

    init(store: ModelStore, plan: CompiledQuery, describedAs name: String) {
        self.store = store
        self.plan = plan
        self.name = name
    }

    /// Starts following the rows' changes, for a form that holds the rows matching now.
    func start(form: Form) {
        self.form = form
        subscriptions.append(store.subscribe(table: plan.table, columns: plan.columnsRead) { [weak self] event in
            self?.apply(event)
        })
        for (index, join) in plan.joins.enumerated() {
            subscriptions.append(store.subscribe(table: join.targetTable, columns: join.columnsRead) { [weak self] event in
                self?.apply(event, toRowsPointingThrough: index)
            })
        }
        // Rows whose key the database has yet to assign, and rows that reach one.
        subscriptions.append(store.subscribeToReevaluations(table: plan.table) { [weak self] event in self?.apply(event) })
        for join in plan.joins {
            subscriptions.append(store.subscribeToReevaluations(table: join.targetTable) { [weak self] event in
                self?.reevaluateRows(reaching: event.key, through: join)
            })
        }
        // Made inside a transaction, the form holds part of its changes, from which the
        // transaction's events (its net change, or none if it fails) do not tell: it reads its
        // rows again when the transaction ends.
        store.whenTransactionEnds { [weak self] in self?.reload() }
    }

    /// A change the form made of itself (a window moved): published once the delivery under
    /// way ends, or at once outside one.
    func formChanged() {
        beginChange()
    }

    // MARK: - Changes heard

    private func apply(_ event: ChangeEvent) {
        beginChange()
        defer { reloadIfStale() }
        do {
            switch event.kind {
            case .reset:
                try reloadNow()
            case .delete:
                // Gone for this store, whether or not its delete has committed yet.
                form?.place(event.key, values: nil)
            case .insert, .update:
                try reevaluate(event.key)
            case .children:
                // A live query subscribes to no relationship's children.
                return
            }
        } catch {
            // The row could not be read now: it is read again once the store's actor is free
            // (`refreshExternalChanges()` awaits that), and placed then.
            if event.kind == .reset { reloadLater() } else { reevaluateLater(event.key) }
        }
    }

    /// A change of a row that a relationship points at: the rows that point at it are
    /// re-evaluated, and no others, once the delivery under way ends (before any live form
    /// publishes).
    private func apply(_ event: ChangeEvent, toRowsPointingThrough join: Int) {
        guard event.kind != .reset else { return apply(event) }
        if changedTargets.isEmpty {
            store.onceDelivered { [weak self] in self?.placeRowsPointingAtChangedTargets() }
        }
        changedTargets[join, default: []].insert(event.key)
        beginChange()
    }

    /// Re-evaluates the rows pointing at the targets that changed in the delivery that ends,
    /// with one read per join for each 500 targets.
    private func placeRowsPointingAtChangedTargets() {
        let changed = changedTargets
        changedTargets = [:]
        for (index, targets) in changed.sorted(by: { $0.key < $1.key }) {
            let keys = targets.sortedInValueOrder()
            for start in stride(from: 0, to: keys.count, by: 500) {
                let read = store.reads.matching(plan.rowsPointing(atAnyOf: Array(keys[start..<min(start + 500, keys.count)]), through: plan.joins[index]), windowed: false)
                do {
                    guard let pointing = try store.reads.atOnce(read) else {
                        readLater(read) { [weak self] rows in self?.placeLater(rows) }
                        continue
                    }
                    for values in pointing { place(values) }
                } catch {
                    // The rows could not be read now: they are read again later, and placed then.
                    readLater(read) { [weak self] rows in self?.placeLater(rows) }
                }
            }
        }
        reloadIfStale()
    }

    /// A row of a join's target table whose key the database has yet to assign changed, came
    /// or went: the rows whose to-one reaches it are judged again (they are this store's
    /// changes not yet committed; a row the database holds points at no such row).
    private func reevaluateRows(reaching key: SQLValue, through join: CompiledQuery.Join) {
        guard let request = KeyPlaceholder.request(in: key) else { return }
        beginChange()
        defer { reloadIfStale() }
        for row in store.writeBehind.rowsLinking(toInsert: request, table: plan.table, column: join.column) {
            let key = switch row {
            case .key(let key): key
            case .insert(let request): KeyPlaceholder.value(forInsert: request)
            }
            // A row that cannot be read now is read again later.
            do { try reevaluate(key) } catch { reevaluateLater(key) }
        }
    }

    /// Tells the form where a row of the query stands (by default, the row its values name).
    private func place(_ values: [SQLValue], key: SQLValue? = nil) {
        form?.place(key ?? values[plan.schema.primaryKeyIndex], values: plan.matches(values) ? values : nil)
    }

    /// Tells the form where one row stands by its current values; once read, where its
    /// values must be read from a server.
    private func reevaluate(_ key: SQLValue) throws {
        guard let values = try store.reads.atOnce(store.reads.queryRow(plan, key: key)) else { return reevaluateLater(key) }
        guard let values else { return form?.place(key, values: nil) ?? () }
        place(values, key: key)
    }

    /// The same, once the row's values are read, awaited.
    private func reevaluateLater(_ key: SQLValue) {
        readLater(store.reads.queryRow(plan, key: key)) { [weak self] values in self?.placeLater(values.map { [$0] } ?? [], judging: [key]) }
    }

    // MARK: - Reading every row again

    /// Reads every matching row again (a transaction the form was made in ended).
    private func reload() {
        // A read that fails now is made again later, awaited.
        changeLater {
            do { try reloadNow() } catch { reloadLater() }
        }
    }

    private func reloadNow() throws {
        reloads += 1
        // The rows pointing at the targets changed so far are among those read here.
        changedTargets = [:]
        guard let matching = try store.reads.atOnce(store.reads.matching(plan, windowed: false)) else { return reloadLater() }
        isStale = false
        form?.replaceAll(with: matching)
    }

    /// Reads every matching row again, as a reset does, where the form may be out of date
    /// (see ``isStale``). Call inside a change, once its event is applied.
    private func reloadIfStale() {
        guard isStale else { return }
        isStale = false
        do { try reloadNow() } catch { reloadLater() }
    }

    // MARK: - Reading from a server

    /// Reads later, awaited, and hands the result to `then`; a read that fails leaves the form
    /// stale (see ``isStale``), and says so on `writeErrors` (once, until it is current again).
    private func readLater<Read: ShownRead>(_ read: Read, then: @escaping (Read.Result) -> Void) {
        let reloadsBefore = reloads
        store.reads.later(read, then: then, failed: { [weak self] error in
            guard let self, reloads == reloadsBefore, !isStale else { return }
            isStale = true
            store.writeBehind.errors.reportFailedRead(error, "\(name) could not read the rows it must judge; it shows what it showed until its next change, which reads them all again")
        })
    }

    /// Reads all the matching rows again, from the server, and takes them once read (after a
    /// reset, on PostgreSQL).
    private func reloadLater() {
        reloads += 1
        changedTargets = [:]
        readLater(store.reads.matching(plan, windowed: false)) { [weak self] matching in
            self?.changeLater {
                self?.isStale = false
                self?.form?.replaceAll(with: matching)
            }
        }
    }

    /// Places rows of the query read from the server; a key in `judging` that the read did not
    /// return leaves the form.
    private func placeLater(_ rows: [[SQLValue]], judging keys: [SQLValue] = []) {
        changeLater {
            var left = Set(keys)
            for values in rows {
                left.remove(values[plan.schema.primaryKeyIndex])
                place(values)
            }
            for key in left { form?.place(key, values: nil) }
        }
    }

    /// A change made outside a delivery (a read from the server came back, a transaction the
    /// form was made in ended): published at once, once made.
    private func changeLater(_ change: () -> Void) {
        change()
        beginChange()
    }

    private func beginChange() {
        guard !isPublishScheduled else { return }
        isPublishScheduled = true
        store.afterDelivery(publishAfterDelivery)
    }

    /// Publishes the form's change: made once, since nearly every change schedules it.
    private lazy var publishAfterDelivery: () -> Void = { [weak self] in
        guard let self else { return }
        isPublishScheduled = false
        form?.publish()
    }
}
