/// Those who take a live result's changes as differences: ``FetchedResults/onChange(_:)``
/// handlers, in the order they were registered, and ``FetchedResults/differences`` streams.
///
/// A class, so that a handler may register or cancel handlers while it is called.
final class DifferenceObservers<Difference: Sendable> {
    private var handlers: [(id: UInt64, handler: (Difference) -> Void)] = []
    private var streams: [AsyncStream<Difference>.Continuation] = []
    private var lastHandler: UInt64 = 0

    /// Whether anyone takes differences: where nobody does, none is made.
    var isEmpty: Bool { handlers.isEmpty && streams.isEmpty }

    /// Registers a handler; returns its identifier, for ``remove(_:)``.
    func add(_ handler: @escaping (Difference) -> Void) -> UInt64 {
        lastHandler += 1
        handlers.append((lastHandler, handler))
        return lastHandler
    }

    func remove(_ id: UInt64) {
        handlers.removeAll { $0.id == id }
    }

    /// A new stream of the differences sent from now on.
    func makeStream() -> AsyncStream<Difference> {
        let (stream, continuation) = AsyncStream.makeStream(of: Difference.self)
        streams.append(continuation)
        return stream
    }

    /// Hands a difference to every handler, then to every stream; a stream whose iteration
    /// ended is dropped. A handler registered meanwhile hears the next one.
    func send(_ difference: Difference) {
        for (_, handler) in handlers { handler(difference) }
        streams.removeAll { continuation in
            if case .terminated = continuation.yield(difference) { true } else { false }
        }
    }
}
