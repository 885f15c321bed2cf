extension FetchedResults {
    /// Calls `handler` with each change of the results, as insertions and removals with
    /// offsets (a move is a removal and an insertion associated with each other), once the
    /// burst of changes that caused it has been delivered.
    ///
    /// ```swift
    /// let subscription = results.onChange { difference in
    ///     for change in difference.inferringMoves() { print(change) }
    /// }
    /// ```
    public func onChange(_ handler: @escaping (Difference) -> Void) -> Subscription {
        let id = observers.add(handler)
        return Subscription { [weak self] in self?.observers.remove(id) }
    }

    /// Each change of the results, as an `AsyncSequence`. Each access makes a new stream; it
    /// is dropped at the first change after its iteration ended.
    ///
    /// ```swift
    /// for await difference in results.differences { apply(difference) }
    /// ```
    public var differences: AsyncStream<Difference> {
        observers.makeStream()
    }

    /// A registration of ``onChange(_:)``; cancelled by ``cancel()`` or when released.
    ///
    /// ```swift
    /// let subscription = results.onChange { difference in apply(difference) }
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
