/// Changes waiting for their subscribers: the registrar posts them once its state is consistent,
/// and they are delivered in order, one at a time.
///
/// Whatever a handler does during delivery (assign a property, increment, insert, start a
/// transaction) is an ordinary change: it is posted behind the ones still waiting and delivered
/// by the same loop, never in the middle of another change's bookkeeping.
///
/// A group (a transaction, or one batch of committed changes) defers delivery until it ends,
/// then delivers one event per subscriber and row with the net change.
final class Outbox {
    private enum Entry {
        case update(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin)
        case event(table: Int, ChangeEvent)
        case reset(table: Int, origin: ChangeOrigin)
        case children(table: Int, key: SQLValue, relationship: Int, origin: ChangeOrigin)
        case reevaluation(table: Int, key: SQLValue, origin: ChangeOrigin)
    }

    /// One change recorded inside a group.
    private enum LoggedChange {
        /// `old` is `.null` when it is not known (a row the store holds no object for).
        case update(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin, isOldKnown: Bool)
        case insert(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin)
        /// `values` are all `.null` when they are not known (a row the store holds no object for).
        case delete(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin, isOldKnown: Bool)
        case reset(table: Int, origin: ChangeOrigin)
        case children(table: Int, key: SQLValue, relationship: Int, origin: ChangeOrigin)
        case reevaluation(table: Int, key: SQLValue, origin: ChangeOrigin)
    }

    let feeds: FeedIndex
    // Unchecked exclusivity: these are read on every write. Accesses are single statements;
    // handlers run from `send`, which holds no access to them.
    @exclusivity(unchecked) private var queue: [Entry] = []
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private var isDraining = false
    @exclusivity(unchecked) private var log: [LoggedChange] = []
    @exclusivity(unchecked) private var groupDepth = 0
    /// Work to run once everything posted so far is delivered (a live list publishing the
    /// net effect of a burst of changes), in the order it was asked for.
    private var whenIdle: [() -> Void] = []
    /// Work to run once everything posted so far is delivered, before `whenIdle`'s: a live
    /// form taking in the rest of a burst, so that none of it publishes while another form
    /// has yet to.
    private var whenDelivered: [() -> Void] = []

    /// Hears every change of a row that a to-many relationship reads (set by ``Relationships``
    /// when a model has one), before feeds do: Observation of `list.rows` depends on it.
    var memberships: Memberships?

    init(feeds: FeedIndex) {
        self.feeds = feeds
    }

    /// Runs `work` once every change posted so far has been delivered: at the end of the
    /// current delivery, or of the current group.
    func afterDelivery(_ work: @escaping () -> Void) {
        whenIdle.append(work)
        if groupDepth == 0, !isDraining { drain() }
    }

    /// Runs `work` once every change posted so far has been delivered, before any work
    /// ``afterDelivery(_:)`` holds: for state that other work then runs may read.
    func onceDelivered(_ work: @escaping () -> Void) {
        whenDelivered.append(work)
        if groupDepth == 0, !isDraining { drain() }
    }

    // MARK: - Posting

    /// Posts one column's change: the hot path of every tracked write.
    func postUpdate(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin) {
        if let memberships, memberships.hasParents(table: table) {
            memberships.childChanged(table: table, key: key, column: column, old: { _ in old }, new: { _ in new }, origin: origin)
        }
        guard feeds.hasSubscriptions(table: table) else { return }
        if groupDepth > 0 {
            log.append(.update(table: table, key: key, column: column, old: old, new: new, origin: origin, isOldKnown: true))
        } else {
            deliver(.update(table: table, key: key, column: column, old: old, new: new, origin: origin))
        }
    }

    /// Posts one column's change of a row whose old values the store does not know (it holds
    /// no object for it): subscribers hear it with `.null` as the old value, even when the new
    /// value is NULL too.
    func postUpdateOfUnknownRow(table: Int, key: SQLValue, column: Int, new: SQLValue, origin: ChangeOrigin) {
        if let memberships, memberships.hasParents(table: table) {
            memberships.childChanged(table: table, key: key, column: column, old: { _ in SQLValue?.none }, new: { _ in new }, origin: origin)
        }
        guard feeds.hasSubscriptions(table: table) else { return }
        if groupDepth > 0 {
            log.append(.update(table: table, key: key, column: column, old: .null, new: new, origin: origin, isOldKnown: false))
        } else {
            deliver(.update(table: table, key: key, column: column, old: .null, new: new, origin: origin))
        }
    }

    func postInsert(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin) {
        if let memberships, memberships.hasParents(table: table) {
            // A row of this key may have been there for the store already (another process's,
            // which this insert replaces): where it pointed is not known here.
            memberships.childChanged(
                table: table, key: key, old: { _ in SQLValue?.none }, new: { values.indices.contains($0) ? values[$0] : .null }, origin: origin
            )
        }
        if groupDepth > 0 {
            log.append(.insert(table: table, key: key, values: values, origin: origin))
        } else if feeds.hasSubscriptions(table: table) {
            deliver(.event(table: table, event(table: table, key: key, kind: .insert, old: nil, new: values, origin: origin)))
        }
    }

    /// Posts a row's deletion, with its last values.
    func postDelete(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin) {
        postDelete(table: table, key: key, values: values, origin: origin, isOldKnown: true)
    }

    /// Posts the deletion of a row whose values the store does not know (it holds no object for
    /// it): subscribers hear NULL as the old values.
    func postDeleteOfUnknownRow(table: Int, key: SQLValue, origin: ChangeOrigin) {
        let values = Array(repeating: SQLValue.null, count: feeds.schemas[table].columns.count)
        postDelete(table: table, key: key, values: values, origin: origin, isOldKnown: false)
    }

    private func postDelete(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin, isOldKnown: Bool) {
        if let memberships, memberships.hasParents(table: table) {
            // Unknown is `SQLValue?.none`: a bare `nil` would be SQLValue's `.null`.
            memberships.childChanged(table: table, key: key, old: { isOldKnown ? values[$0] : SQLValue?.none }, new: { _ in .null }, origin: origin)
        }
        if groupDepth > 0 {
            log.append(.delete(table: table, key: key, values: values, origin: origin, isOldKnown: isOldKnown))
        } else if feeds.hasSubscriptions(table: table) {
            deliver(.event(table: table, event(table: table, key: key, kind: .delete, old: values, new: nil, origin: origin)))
        }
    }

    /// Tells every subscriber of a table to re-read it; inside a group, when the group ends,
    /// and not at all if the group's level fails.
    func postReset(table: Int, origin: ChangeOrigin) {
        if let memberships, memberships.hasParents(table: table) { memberships.childTableReset(table: table, origin: origin) }
        if groupDepth > 0 {
            log.append(.reset(table: table, origin: origin))
        } else {
            queue.append(.reset(table: table, origin: origin))
            drain()
        }
    }

    /// Posts a change of the children of a parent's to-many relationship (a child came or
    /// went); inside a group, once per parent and relationship when the group ends.
    func postChildren(table: Int, key: SQLValue, relationship: Int, origin: ChangeOrigin) {
        guard feeds.hasSubscriptions(table: table) else { return }
        if groupDepth > 0 {
            log.append(.children(table: table, key: key, relationship: relationship, origin: origin))
        } else {
            deliver(.children(table: table, key: key, relationship: relationship, origin: origin))
        }
    }

    /// Tells the live results of a table to judge a row again, though no column subscribers
    /// see changed (see ``FeedIndex/Key/reevaluation(_:)``); inside a group, once per row
    /// when the group ends.
    func postReevaluation(table: Int, key: SQLValue, origin: ChangeOrigin = .local) {
        guard feeds.hasSubscriptions(.reevaluation(table)) else { return }
        if groupDepth > 0 {
            log.append(.reevaluation(table: table, key: key, origin: origin))
        } else {
            deliver(.reevaluation(table: table, key: key, origin: origin))
        }
    }

    // MARK: - Groups

    /// Starts a group (or a nested level of one) and returns its mark in the log.
    func beginGroup() -> Int {
        groupDepth += 1
        return log.count
    }

    /// Ends a level: a failed one drops what it logged since `mark`; the outermost delivers the
    /// net change of each row, in the order rows were first touched.
    func endGroup(from mark: Int, keeping: Bool) {
        if !keeping { log.removeSubrange(mark...) }
        groupDepth -= 1
        guard groupDepth == 0 else { return }
        // The log's storage is kept for the next group (a batch of committed changes logs
        // about as many as the last), unless it grew large.
        var logged: [LoggedChange] = []
        swap(&logged, &log)
        queue += netEvents(logged)
        if logged.capacity <= 4_096 {
            logged.removeAll(keepingCapacity: true)
            log = logged
        }
        drain()
    }

    // MARK: - Delivering

    /// Delivers an entry now, unless another is being delivered: then it waits its turn.
    private func deliver(_ entry: Entry) {
        guard !isDraining else {
            queue.append(entry)
            return
        }
        isDraining = true
        send(entry)
        isDraining = false
        drain()
    }

    private func drain() {
        guard !isDraining, head < queue.count || !whenDelivered.isEmpty || !whenIdle.isEmpty else { return }
        isDraining = true
        defer { isDraining = false }
        repeat {
            while head < queue.count {
                let entry = queue[head]
                head += 1
                send(entry)
            }
            queue.removeAll(keepingCapacity: queue.count < 1_024)
            head = 0
            if !whenDelivered.isEmpty {
                var delivered = Self.take(&whenDelivered)
                for work in delivered { work() }
                delivered.removeAll(keepingCapacity: true)
                Self.giveBack(delivered, to: &whenDelivered)
                continue
            }
            // What runs when idle may post more (a handler of the list's change writes).
            var idle = Self.take(&whenIdle)
            for work in idle { work() }
            idle.removeAll(keepingCapacity: true)
            Self.giveBack(idle, to: &whenIdle)
        } while head < queue.count || !whenDelivered.isEmpty || !whenIdle.isEmpty
    }

    /// The work waiting in `list`, which is left empty for the work it adds when it runs.
    private static func take(_ list: inout [() -> Void]) -> [() -> Void] {
        var taken: [() -> Void] = []
        swap(&taken, &list)
        return taken
    }

    /// Gives the emptied storage of work that ran back to its list, when that work added none
    /// (work waits after nearly every change: its list is not made anew each time). The work
    /// is released before, outside any access to the list: releasing it may run a `deinit`
    /// that adds work.
    private static func giveBack(_ storage: [() -> Void], to list: inout [() -> Void]) {
        guard list.isEmpty, storage.isEmpty, storage.capacity <= 1_024 else { return }
        list = storage
    }

    private func send(_ entry: Entry) {
        switch entry {
        case .update(let table, let key, let column, let old, let new, let origin):
            feeds.deliverUpdate(table: table, key: key, column: column, old: old, new: new, origin: origin)
        case .event(let table, let event):
            feeds.deliver(event, table: table)
        case .reset(let table, let origin):
            feeds.deliverReset(table: table, origin: origin)
        case .children(let table, let key, let relationship, let origin):
            feeds.deliverChildren(table: table, key: key, relationship: relationship, origin: origin)
        case .reevaluation(let table, let key, let origin):
            feeds.deliverReevaluation(table: table, key: key, origin: origin)
        }
    }

    private func event(table: Int, key: SQLValue, kind: ChangeEvent.Kind, old: [SQLValue]?, new: [SQLValue]?, origin: ChangeOrigin) -> ChangeEvent {
        let schema = feeds.schemas[table]
        let changes = schema.columns.indices.map { index in
            ColumnChange(column: schema.columns[index].name, index: index, old: old?[index] ?? .null, new: new?[index] ?? .null)
        }
        return ChangeEvent(table: schema.name, key: key, kind: kind, changes: changes, origin: origin)
    }

    /// The net change of each row in a group's log, from what the row was before the group to
    /// what it is after: a value changed and changed back is no change; a row inserted and
    /// deleted in the group is no change; a row deleted and inserted again is an update of the
    /// columns that differ; a deleted row reports its deletion only; an inserted row reports its
    /// insertion with its final values. A reset supersedes the changes of its table's rows
    /// logged before it. A parent's children changing is told once, where it was first logged;
    /// so is a row to judge again.
    private func netEvents(_ log: [LoggedChange]) -> [Entry] {
        enum Item {
            /// The row whose net change is `nets[index]`.
            case row(Int)
            case reset(table: Int, origin: ChangeOrigin)
            case children(RowReference, relationship: Int, origin: ChangeOrigin)
            case reevaluation(RowReference, origin: ChangeOrigin)
        }
        var reevaluated: Set<RowReference> = []
        struct Relationship: Hashable {
            var parent: RowReference
            var relationship: Int
        }
        var childrenTold: Set<Relationship> = []
        struct Net {
            var row: RowReference
            /// Whether the row was there before the group: the first change logged says so.
            var existed: Bool
            /// Whether the row is there now.
            var exists: Bool
            /// Changed columns of a row that stayed, with their values before the group, if
            /// known, in the order first changed (a row changes a few columns at a time).
            var columns: [(column: Int, old: SQLValue?, new: SQLValue)] = []
            /// The row's values before the group, once a delete told them all (nil where the
            /// store did not know them).
            var before: [SQLValue?]?
            /// The row's values now, since an insert in the group told them all.
            var after: [SQLValue]?
            var origin: ChangeOrigin
        }
        var order: [Item] = []
        order.reserveCapacity(log.count)
        // Each row's net change, and where it is: one lookup for each change logged.
        var nets: [Net] = []
        nets.reserveCapacity(log.count)
        var netIndex: [RowReference: Int] = [:]
        netIndex.reserveCapacity(log.count)
        func touch(_ row: RowReference, existed: Bool, origin: ChangeOrigin) -> Int {
            if let index = netIndex[row] {
                nets[index].origin = origin
                return index
            }
            netIndex[row] = nets.count
            order.append(.row(nets.count))
            nets.append(Net(row: row, existed: existed, exists: existed, origin: origin))
            return nets.count - 1
        }
        for change in log {
            switch change {
            case .reset(let table, let origin):
                order.removeAll {
                    switch $0 {
                    case .row(let index): nets[index].row.table == table
                    case .children(let row, _, _), .reevaluation(let row, _): row.table == table
                    case .reset: false
                    }
                }
                netIndex = netIndex.filter { $0.key.table != table }
                childrenTold = childrenTold.filter { $0.parent.table != table }
                reevaluated = reevaluated.filter { $0.table != table }
                order.append(.reset(table: table, origin: origin))
            case .children(let table, let key, let relationship, let origin):
                let parent = RowReference(table: table, key: key)
                if childrenTold.insert(Relationship(parent: parent, relationship: relationship)).inserted {
                    order.append(.children(parent, relationship: relationship, origin: origin))
                }
            case .reevaluation(let table, let key, let origin):
                let row = RowReference(table: table, key: key)
                if reevaluated.insert(row).inserted { order.append(.reevaluation(row, origin: origin)) }
            case .update(let table, let key, let column, let old, let new, let origin, let isOldKnown):
                let index = touch(RowReference(table: table, key: key), existed: true, origin: origin)
                if nets[index].after != nil {
                    nets[index].after![column] = new
                } else if let earlier = nets[index].columns.firstIndex(where: { $0.column == column }) {
                    nets[index].columns[earlier].new = new
                } else {
                    // (SQLValue is ExpressibleByNilLiteral: a bare `nil` here would be `.null`.)
                    nets[index].columns.append((column, isOldKnown ? old : SQLValue?.none, new))
                }
            case .insert(let table, let key, let values, let origin):
                let index = touch(RowReference(table: table, key: key), existed: false, origin: origin)
                nets[index].exists = true
                nets[index].after = values
            case .delete(let table, let key, let values, let origin, let isOldKnown):
                let index = touch(RowReference(table: table, key: key), existed: true, origin: origin)
                var net = nets[index]
                if net.existed, net.before == nil {
                    net.before = values.indices.map { column -> SQLValue? in
                        if let changed = net.columns.first(where: { $0.column == column }) { return changed.old }
                        return isOldKnown ? values[column] : SQLValue?.none
                    }
                }
                net.exists = false
                net.after = nil
                net.columns = []
                nets[index] = net
            }
        }
        // The net change of each item, in order; nil where there is none.
        func entry(of item: Item) -> Entry? {
            let net: Net
            switch item {
            case .row(let index): net = nets[index]
            case .reset(let table, let origin): return .reset(table: table, origin: origin)
            case .children(let parent, let relationship, let origin):
                return .children(table: parent.table, key: parent.key, relationship: relationship, origin: origin)
            case .reevaluation(let row, let origin):
                return .reevaluation(table: row.table, key: row.key, origin: origin)
            }
            let row = net.row
            switch (net.existed, net.exists) {
            case (false, false):
                return nil
            case (false, true):
                return .event(table: row.table, event(table: row.table, key: row.key, kind: .insert, old: nil, new: net.after, origin: net.origin))
            case (true, false):
                return .event(table: row.table, event(table: row.table, key: row.key, kind: .delete, old: net.before?.map { $0 ?? .null }, new: nil, origin: net.origin))
            case (true, true):
                var columns = net.columns
                if let before = net.before, let after = net.after {
                    columns = before.indices.map { ($0, before[$0], after[$0]) }
                }
                let schema = feeds.schemas[row.table]
                var changes: [ColumnChange] = []
                changes.reserveCapacity(columns.count)
                for (index, old, new) in columns where old != new && !(old.map { $0.isSameNumber(as: new) } ?? false) {
                    changes.append(ColumnChange(column: schema.columns[index].name, index: index, old: old ?? .null, new: new))
                }
                guard !changes.isEmpty else { return nil }
                if changes.count > 1 { changes.sort { $0.index < $1.index } }
                return .event(table: row.table, ChangeEvent(table: schema.name, key: row.key, kind: .update, changes: changes, origin: net.origin))
            }
        }
        var entries: [Entry] = []
        entries.reserveCapacity(order.count)
        for item in order {
            if let entry = entry(of: item) { entries.append(entry) }
        }
        return entries
    }
}
