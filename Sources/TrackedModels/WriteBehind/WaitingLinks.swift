/// The links a commit has written NULL so far, each waiting for its target's key (see
/// ``DeferredLink`` and ``KeyedInserts``), with the operation that made it: a refusal of the
/// link is that operation's. Both engines' commits keep one.
///
/// ```swift
/// var waiting = WaitingLinks()
/// waiting.add(links, unit: 0, operation: 0)          // row 1's insert, list_id NULL for now
/// waiting.drop(overwrittenBy: nextOperation, keys: assignedKeys)
/// for ready in waiting.takeReady(keys: assignedKeys, inserted: { _ in nil }) { /* UPDATE */ }
/// ```
struct WaitingLinks {
    /// A link whose row and target both have their keys: the engine writes it now.
    struct Ready {
        var link: DeferredLink
        /// The key of the row that holds the link.
        var row: SQLValue
        /// The key it takes.
        var key: SQLValue
        var unit: Int
        var operation: Int
    }

    private var links: [(link: DeferredLink, unit: Int, operation: Int)] = []

    var isEmpty: Bool { links.isEmpty }

    /// Whether a link waits for the key of the insert `request`.
    func waits(forInsert request: UInt64) -> Bool {
        links.contains { $0.link.request == request }
    }

    mutating func add(_ new: [DeferredLink], unit: Int, operation: Int) {
        links += new.map { ($0, unit, operation) }
    }

    /// Drops the links `operation` (as the engine runs it) makes stale: a later write of the
    /// link's cell, a delete of its row or of every row of its table, an insert of its key again.
    /// Writing such a link once its target is in would overwrite what came after it.
    ///
    /// - Parameter keys: The keys the commit assigned so far, by insert request.
    mutating func drop(overwrittenBy operation: WriteOperation, keys: [UInt64: SQLValue]) {
        guard !links.isEmpty else { return }
        links.removeAll { waiting in
            let link = waiting.link
            guard operation.table == link.table else { return false }
            let row: SQLValue? = switch link.row {
            case .key(let key): key
            case .insert(let request): keys[request]
            }
            switch operation {
            case .deleteAll: return true
            case .delete(let deleted): return deleted.key == row
            case .insert(let request): return request.row != nil && request.row?.key == row
            case .update(let updated, let cells): return updated.key == row && cells.contains { $0.column == link.column }
            }
        }
    }

    /// Takes the links whose row and target have their keys by now: the target's from `keys`
    /// (assigned) or `inserted` (given by the program, once its insert ran).
    mutating func takeReady(keys: [UInt64: SQLValue], inserted: (UInt64) -> SQLValue?) -> [Ready] {
        var ready: [Ready] = []
        links.removeAll { waiting in
            let link = waiting.link
            let row: SQLValue? = switch link.row {
            case .key(let key): key
            case .insert(let request): keys[request]
            }
            guard let row, let key = keys[link.request] ?? inserted(link.request) else { return false }
            ready.append(Ready(link: link, row: row, key: key, unit: waiting.unit, operation: waiting.operation))
            return true
        }
        return ready
    }
}
