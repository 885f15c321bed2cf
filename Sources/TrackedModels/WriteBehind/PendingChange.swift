/// A change not yet committed, as ``ModelStore/pendingChanges`` lists it: one atomic unit
/// (one row's change, or everything one transaction wrote).
///
/// ```swift
/// for change in store.pendingChanges where change.error != nil {
///     print(change)                      // update rows 42: count = -1 — refused: CHECK ...
///     try store.discard(change)          // give up on it; the row shows its committed values
/// }
/// ```
public struct PendingChange: Sendable, Identifiable, CustomStringConvertible {
    /// Identifies the unit while it is pending.
    public let id: UInt64
    /// What the unit writes, one line per operation, such as `update rows 42: count += 1`.
    public let operations: [String]
    /// Whether the worker is committing it right now (it cannot be discarded then).
    public let isInFlight: Bool
    /// Why the database refused the unit, while it is stuck; `nil` for a change that simply
    /// has not been committed yet.
    public let error: StoreError?

    public var description: String {
        let text = operations.joined(separator: "; ")
        guard let error else { return text }
        return "\(text) — refused: \(error.underlying.map { "\($0)" } ?? error.message)"
    }
}
