public import TrackedModels

/// Counts the events each named subscriber receives, for fan-out contracts in your tests.
///
/// Subscribe the probe where your views would subscribe, make a change, and assert who heard
/// it in one line:
///
/// ```swift
/// let probe = NotificationProbe(store: store)
/// for row in rows { try probe.subscribe("row \(row.id)", to: .object(row, \Row.count)) }
/// try probe.subscribe("list", to: .membership(Row.self))
///
/// try store.increment(\Row.count, of: rows[42])
/// #expect(probe.counts == ["row 42": 1])   // exactly one subscriber heard it
/// ```
public final class NotificationProbe {
    private let store: ModelStore
    private var tokens: [FeedToken] = []
    /// Every event received, with the name of the subscriber that received it, in order.
    public private(set) var received: [(subscriber: String, event: ChangeEvent)] = []

    public init(store: ModelStore) {
        self.store = store
    }

    /// Adds a subscriber under a name. Several subscriptions may share a name; their events
    /// count together.
    public func subscribe<Model: TrackedModel>(_ name: String, to scope: FeedScope<Model>) throws {
        tokens.append(try store.subscribe(to: scope) { [unowned self] event in
            received.append((name, event))
        })
    }

    /// Events per subscriber name, listing only subscribers that received at least one.
    public var counts: [String: Int] {
        received.reduce(into: [:]) { $0[$1.subscriber, default: 0] += 1 }
    }

    /// All events received.
    public var total: Int { received.count }

    /// The events one subscriber received, in order.
    public func events(of subscriber: String) -> [ChangeEvent] {
        received.filter { $0.subscriber == subscriber }.map(\.event)
    }

    /// Forgets what was received; the subscriptions stay.
    public func reset() {
        received.removeAll()
    }

    /// Ends every subscription of the probe.
    public func cancel() {
        tokens.forEach { $0.cancel() }
        tokens.removeAll()
    }
}
