/// A subscription to a feed: cancelled by ``cancel()`` or when the token is released.
///
/// ```swift
/// var token: FeedToken? = try store.subscribe(to: .row(42, \Row.count)) { print($0) }
/// token = nil  // no more events
/// ```
///
/// > Important: Keep the token as long as you want events, typically in a property. In an
/// > optimized build, a local variable that is never read again may be released right after
/// > its last use, which ends the subscription; call ``cancel()`` at the end of the scope, or
/// > use `withExtendedLifetime`.
public final class FeedToken {
    // Strong: a weak reference would give the index a side table and slow down every write's
    // retain of it. A token that outlives its store keeps only the (detached) index alive.
    private let index: FeedIndex
    private let subscription: FeedIndex.Subscription
    var cancelsOnRelease = true

    init(index: FeedIndex, subscription: FeedIndex.Subscription) {
        self.index = index
        self.subscription = subscription
    }

    deinit {
        if cancelsOnRelease { cancel() }
    }

    var subscriptionID: UInt64 { subscription.id }

    /// Stops delivery. Calling it again does nothing.
    public func cancel() {
        index.remove(subscription)
    }

    /// Whether events are still delivered.
    public var isActive: Bool {
        !subscription.isCancelled
    }
}
