/// A subscription to a feed: cancelled by ``cancel()`` or when the token is released.
///
/// ```swift
/// var token: FeedToken? = store.subscribe(to: .row(42, \Row.count)) { print($0) }
/// token = nil  // no more events
/// ```
public final class FeedToken {
    private weak var index: FeedIndex?
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
        index?.remove(subscription)
    }

    /// Whether events are still delivered.
    public var isActive: Bool {
        !subscription.isCancelled
    }
}
