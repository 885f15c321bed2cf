/// Those who take a live result's changes: ``FetchedResults/onChange(_:)`` handlers, in the
/// order they were registered, and ``FetchedResults/differences`` streams.
///
/// A class, so that a handler may register or cancel handlers while it is called.
final class ChangeObservers<Change: Sendable> {
    private var handlers: [(id: UInt64, handler: (Change) -> Void)] = []
    private var streams: [AsyncStream<Change>.Continuation] = []
    private var lastHandler: UInt64 = 0

    /// Whether anyone takes changes: where nobody does, none is made. Stored, so that asking
    /// costs no look-up of the arrays' generic types on every change.
    private(set) var isEmpty = true

    /// Registers a handler; returns its identifier, for ``remove(_:)``.
    func add(_ handler: @escaping (Change) -> Void) -> UInt64 {
        lastHandler += 1
        handlers.append((lastHandler, handler))
        isEmpty = false
        return lastHandler
    }

    func remove(_ id: UInt64) {
        handlers.removeAll { $0.id == id }
        isEmpty = handlers.isEmpty && streams.isEmpty
    }

    /// A new stream of the changes sent from now on.
    func makeStream() -> AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self)
        streams.append(continuation)
        isEmpty = false
        return stream
    }

    /// Hands a change to every handler, then to every stream; a stream whose iteration
    /// ended is dropped. A handler registered meanwhile hears the next one.
    func send(_ change: Change) {
        for (_, handler) in handlers { handler(change) }
        guard !streams.isEmpty else { return }
        streams.removeAll { continuation in
            if case .terminated = continuation.yield(change) { true } else { false }
        }
        isEmpty = handlers.isEmpty && streams.isEmpty
    }
}
