extension FetchedResults {
    /// Calls `handler` with each change of the results (the offsets of the rows that left and
    /// entered, a move being both; see ``Change``), once the burst of changes that caused it
    /// has been delivered.
    ///
    /// ```swift
    /// let subscription = results.onChange { change in
    ///     print("removed", change.removedOffsets, "inserted", change.insertedOffsets)
    ///     shownKeys = shownKeys.applying(change.difference)!   // as a CollectionDifference
    /// }
    /// ```
    public func onChange(_ handler: @escaping (Change) -> Void) -> Subscription {
        let id = observers.add { handler(Change($0)) }
        return Subscription { [weak self] in self?.observers.remove(id) }
    }

    /// Each change of the results (see ``Change``), as an `AsyncSequence`. Each access makes
    /// a new stream; it is dropped at the first change after its iteration ended.
    ///
    /// ```swift
    /// for await change in results.differences { apply(change.difference) }
    /// ```
    public var differences: AsyncStream<Change> {
        let (stream, continuation) = AsyncStream.makeStream(of: Change.self)
        observers.addStream { changes in
            if case .terminated = continuation.yield(Change(changes)) { false } else { true }
        }
        return stream
    }

    /// A registration of ``onChange(_:)``; cancelled by ``cancel()`` or when released.
    ///
    /// ```swift
    /// let subscription = results.onChange { change in apply(change) }
    /// subscription.cancel()   // no more calls
    /// ```
    public final class Subscription {
        private var onCancel: (() -> Void)?

        init(onCancel: @escaping () -> Void) {
            self.onCancel = onCancel
        }

        deinit { cancel() }

        /// Stops the calls. Calling it again does nothing.
        public func cancel() {
            onCancel?()
            onCancel = nil
        }
    }
}
