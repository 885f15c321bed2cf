/// Those who take a live list's changes: ``FetchedResults/onChange(_:)`` handlers, in the
/// order they were registered, and ``FetchedResults/differences`` streams, each told the net
/// change of a burst as the list recorded it (``ListChanges``).
///
/// Not generic, so that telling a change looks up no generic type at run time: each handler
/// and stream makes its list's typed ``FetchedResults/Change`` itself.
///
/// A class, so that a handler may register or cancel handlers while it is called.
final class ChangeObservers {
    private var handlers: [(id: UInt64, handler: (ListChanges) -> Void)] = []
    /// Each stream's yield, which says whether its iteration goes on.
    private var streams: [(ListChanges) -> Bool] = []
    private var lastHandler: UInt64 = 0

    /// Whether anyone takes changes: where nobody does, none is made.
    var isEmpty: Bool { handlers.isEmpty && streams.isEmpty }

    /// Registers a handler; returns its identifier, for ``remove(_:)``.
    func add(_ handler: @escaping (ListChanges) -> Void) -> UInt64 {
        lastHandler += 1
        handlers.append((lastHandler, handler))
        return lastHandler
    }

    func remove(_ id: UInt64) {
        handlers.removeAll { $0.id == id }
    }

    /// Registers a stream by its yield, which returns false once the stream's iteration ended.
    func addStream(_ yield: @escaping (ListChanges) -> Bool) {
        streams.append(yield)
    }

    /// Hands a change to every handler, then to every stream; a stream whose iteration
    /// ended is dropped. A handler registered meanwhile hears the next one; a stream made
    /// meanwhile hears this one.
    func send(_ changes: ListChanges) {
        for (_, handler) in handlers { handler(changes) }
        guard !streams.isEmpty else { return }
        streams.removeAll { yield in !yield(changes) }
    }
}
