extension FetchedResults {
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

    /// A difference of stored keys as one of typed keys, offsets and associations kept.
    static func typed(_ difference: CollectionDifference<SQLValue>, _ typedKey: (SQLValue) -> Model.PrimaryKeyValue?) -> Difference {
        let changes = difference.map { change -> Difference.Change in
            switch change {
            case .insert(let offset, let key, let associated): .insert(offset: offset, element: typedKey(key), associatedWith: associated)
            case .remove(let offset, let key, let associated): .remove(offset: offset, element: typedKey(key), associatedWith: associated)
            }
        }
        guard let typed = Difference(changes) else { preconditionFailure("a difference's changes form a difference") }
        return typed
    }
}
