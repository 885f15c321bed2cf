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
    }

    /// One change recorded inside a group.
    private enum LoggedChange {
        case update(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin)
        case insert(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin)
        case delete(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin)
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

    init(feeds: FeedIndex) {
        self.feeds = feeds
    }

    /// Runs `work` once every change posted so far has been delivered: at the end of the
    /// current delivery, or of the current group.
    func afterDelivery(_ work: @escaping () -> Void) {
        whenIdle.append(work)
        if groupDepth == 0, !isDraining { drain() }
    }

    // MARK: - Posting

    /// Posts one column's change: the hot path of every tracked write.
    func postUpdate(table: Int, key: SQLValue, column: Int, old: SQLValue, new: SQLValue, origin: ChangeOrigin) {
        guard feeds.hasSubscriptions(table: table) else { return }
        if groupDepth > 0 {
            log.append(.update(table: table, key: key, column: column, old: old, new: new, origin: origin))
        } else {
            deliver(.update(table: table, key: key, column: column, old: old, new: new, origin: origin))
        }
    }

    func postInsert(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin) {
        if groupDepth > 0 {
            log.append(.insert(table: table, key: key, values: values, origin: origin))
        } else if feeds.hasSubscriptions(table: table) {
            deliver(.event(table: table, event(table: table, key: key, kind: .insert, old: nil, new: values, origin: origin)))
        }
    }

    func postDelete(table: Int, key: SQLValue, values: [SQLValue], origin: ChangeOrigin) {
        if groupDepth > 0 {
            log.append(.delete(table: table, key: key, values: values, origin: origin))
        } else if feeds.hasSubscriptions(table: table) {
            deliver(.event(table: table, event(table: table, key: key, kind: .delete, old: values, new: nil, origin: origin)))
        }
    }

    /// Tells every subscriber of a table to re-read it.
    func postReset(table: Int, origin: ChangeOrigin) {
        queue.append(.reset(table: table, origin: origin))
        if groupDepth == 0 { drain() }
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
        let logged = log
        log.removeAll()
        for (table, event) in netEvents(logged) { queue.append(.event(table: table, event)) }
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
        guard !isDraining, head < queue.count || !whenIdle.isEmpty else { return }
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
            // What runs when idle may post more (a handler of the list's change writes).
            let idle = whenIdle
            whenIdle.removeAll()
            for work in idle { work() }
        } while head < queue.count || !whenIdle.isEmpty
    }

    private func send(_ entry: Entry) {
        switch entry {
        case .update(let table, let key, let column, let old, let new, let origin):
            feeds.deliverUpdate(table: table, key: key, column: column, old: old, new: new, origin: origin)
        case .event(let table, let event):
            feeds.deliver(event, table: table)
        case .reset(let table, let origin):
            feeds.deliverReset(table: table, origin: origin)
        }
    }

    private func event(table: Int, key: SQLValue, kind: ChangeEvent.Kind, old: [SQLValue]?, new: [SQLValue]?, origin: ChangeOrigin) -> ChangeEvent {
        let schema = feeds.schemas[table]
        let changes = schema.columns.indices.map { index in
            ColumnChange(column: schema.columns[index].name, index: index, old: old?[index] ?? .null, new: new?[index] ?? .null)
        }
        return ChangeEvent(table: schema.name, key: key, kind: kind, changes: changes, origin: origin)
    }

    /// The net change of each row in a group's log. A value changed and changed back is no
    /// change; a row inserted and deleted in the group is no change; a deleted row reports its
    /// deletion only; an inserted row reports its insertion with its final values.
    private func netEvents(_ log: [LoggedChange]) -> [(table: Int, event: ChangeEvent)] {
        struct Net {
            var columns: [Int: (old: SQLValue, new: SQLValue)] = [:]
            var inserted: [SQLValue]?
            var deleted: [SQLValue]?
            var origin = ChangeOrigin.local
        }
        var order: [RowReference] = []
        var rows: [RowReference: Net] = [:]
        func touch(_ row: RowReference) {
            if rows[row] == nil {
                order.append(row)
                rows[row] = Net()
            }
        }
        for change in log {
            switch change {
            case .update(let table, let key, let column, let old, let new, let origin):
                let row = RowReference(table: table, key: key)
                touch(row)
                let first = rows[row]!.columns[column]?.old ?? old
                rows[row]!.columns[column] = (first, new)
                rows[row]!.origin = origin
            case .insert(let table, let key, let values, let origin):
                let row = RowReference(table: table, key: key)
                touch(row)
                rows[row]!.inserted = values
                rows[row]!.deleted = nil
                rows[row]!.columns = [:]
                rows[row]!.origin = origin
            case .delete(let table, let key, let values, let origin):
                let row = RowReference(table: table, key: key)
                touch(row)
                if rows[row]!.inserted != nil {
                    rows[row] = Net()  // inserted and deleted within the group: nothing happened
                    continue
                }
                rows[row]!.deleted = values.indices.map { rows[row]!.columns[$0]?.old ?? values[$0] }
                rows[row]!.origin = origin
            }
        }
        return order.compactMap { row in
            let net = rows[row]!
            if let deleted = net.deleted {
                return (row.table, event(table: row.table, key: row.key, kind: .delete, old: deleted, new: nil, origin: net.origin))
            }
            if var inserted = net.inserted {
                for (column, values) in net.columns { inserted[column] = values.new }
                return (row.table, event(table: row.table, key: row.key, kind: .insert, old: nil, new: inserted, origin: net.origin))
            }
            let schema = feeds.schemas[row.table]
            let changes = net.columns.sorted { $0.key < $1.key }.compactMap { index, values in
                values.old == values.new ? nil
                    : ColumnChange(column: schema.columns[index].name, index: index, old: values.old, new: values.new)
            }
            guard !changes.isEmpty else { return nil }
            return (row.table, ChangeEvent(table: schema.name, key: row.key, kind: .update, changes: changes, origin: net.origin))
        }
    }
}
