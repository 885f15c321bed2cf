/// Compiled statements kept for reuse, at most ``capacity`` of them: when a new one would pass
/// that, the least recently used is finalized.
///
/// A connection that runs many distinct SQL strings (ad-hoc fetches, one UPDATE shape per set
/// of changed columns) keeps a bounded number of prepared statements, so its memory does not
/// grow with the variety of its queries.
///
/// ```swift
/// var cache = StatementCache<String>(capacity: 64)
/// let statement = try cache.statement(for: sql) { try connection.makeStatement(sql) }
/// ```
struct StatementCache<Key: Hashable> {
    private var entries: [Key: (statement: Statement, lastUse: UInt64)] = [:]
    private var clock: UInt64 = 0
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "a statement cache holds at least one statement")
        self.capacity = capacity
    }

    var count: Int { entries.count }

    /// The cached statement for `key`, reset and ready to bind; or a new one from `make`, cached.
    mutating func statement(for key: Key, make: () throws -> Statement) rethrows -> Statement {
        clock &+= 1
        if let entry = entries[key] {
            entries[key]!.lastUse = clock
            entry.statement.reset()
            return entry.statement
        }
        let statement = try make()
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            entries.removeValue(forKey: oldest)
        }
        entries[key] = (statement, clock)
        return statement
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}
