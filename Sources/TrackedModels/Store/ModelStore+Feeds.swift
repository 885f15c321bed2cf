extension ModelStore {
    /// Calls `handler` with each change in `scope`, until the returned token is cancelled or
    /// released.
    ///
    /// Handlers run synchronously on the store's actor, right after the change (for changes
    /// inside ``transaction(_:)``, when it ends). A handler may read and write models.
    ///
    /// ```swift
    /// let token = try store.subscribe(to: .row(42, \Row.count)) { event in
    ///     print("row 42 count:", event.change(of: \Row.count)!.new)
    /// }
    /// ```
    public func subscribe<Model: TrackedModel>(to scope: FeedScope<Model>, _ handler: @escaping (ChangeEvent) -> Void) throws -> FeedToken {
        try checkOpen("subscribe")
        let table = try registrar.tableIndex(of: Model.self)
        if case .children(.null, _) = scope.shape {
            throw StoreError(
                code: .notAttached,
                message: "cannot subscribe to the children of a \(Model.self) that has no key yet; insert it and flush (or await committedKey(of:)) first"
            )
        }
        let (keys, columns) = Self.keys(of: scope, table: table)
        let token = feeds.add(keys: keys, columns: columns, handler: handler)
        if case .children(let key, let relationship) = scope.shape {
            // Reads the children once: another process's change that does not name a child's
            // old parent finds the parent through them.
            registrar.relationships.recordChildren(of: RowReference(table: table, key: key), relationship: relationship)
        }
        return token
    }

    /// Subscribes to changes of some columns of a table, and to its inserts and deletes: the
    /// entry point of live results.
    func subscribe(table: Int, columns: Set<Int>, _ handler: @escaping (ChangeEvent) -> Void) -> FeedToken {
        var keys: [FeedIndex.Key] = columns.sorted().map { .column(table: table, column: $0) }
        keys.append(.membership(table))
        return feeds.add(keys: keys, columns: columns, handler: handler)
    }

    /// Subscribes to the rows of a table live results must judge again though no column a
    /// subscriber sees changed (see ``FeedIndex/Key/reevaluation(_:)``).
    func subscribeToReevaluations(table: Int, _ handler: @escaping (ChangeEvent) -> Void) -> FeedToken {
        feeds.add(keys: [.reevaluation(table)], columns: nil, handler: handler)
    }

    /// Runs `work` once every change posted so far has been delivered to every subscriber.
    func afterDelivery(_ work: @escaping () -> Void) {
        outbox.afterDelivery(work)
    }

    /// Runs `work` once every change posted so far has been delivered, before the work
    /// ``afterDelivery(_:)`` holds (live forms publishing): a live form takes in the rest of
    /// a burst there, so that an observer of one form finds every other one current.
    func onceDelivered(_ work: @escaping () -> Void) {
        outbox.onceDelivered(work)
    }

    /// Runs `work` when the transaction open now ends (or a level of it fails): for a read
    /// made inside it (live results), which took in part of its changes.
    func whenTransactionEnds(_ work: @escaping () -> Void) {
        registrar.whenTransactionEnds(work)
    }

    /// The changes in `scope`, as an `AsyncSequence`. The subscription ends when the iteration
    /// does (the stream is released or its task cancelled) or the store closes.
    ///
    /// Compose with swift-async-algorithms for rate limits:
    ///
    /// ```swift
    /// for await event in try store.changes(.row(42, \Row.count))
    ///     .debounce(for: .milliseconds(100), clock: .continuous) {
    ///     render(event)   // once a burst settles, with its latest value
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - scope: Which changes to hear, as for ``subscribe(to:_:)``.
    ///   - bufferingPolicy: What the stream keeps while nobody iterates: everything by default;
    ///     `.bufferingNewest(1)` keeps only the latest event.
    public func changes<Model: TrackedModel>(
        _ scope: FeedScope<Model>,
        bufferingPolicy: AsyncStream<ChangeEvent>.Continuation.BufferingPolicy = .unbounded
    ) throws -> AsyncStream<ChangeEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChangeEvent.self, bufferingPolicy: bufferingPolicy)
        let token = try subscribe(to: scope) { continuation.yield($0) }
        let mailbox = mailbox
        let subscription = token.subscriptionID
        continuation.onTermination = { _ in mailbox.send(.streamTerminated(subscription: subscription)) }
        // The stream's end cancels the subscription, not the token's release.
        token.cancelsOnRelease = false
        feedStreams[subscription] = continuation
        return stream
    }

    /// Runs `body` and subscribes once to exactly the tracked cells it read (and the to-many
    /// relationships it read, for their children coming and going), like
    /// `withObservationTracking`.
    ///
    /// `onChange` runs once, for the first change to any of those cells (after the
    /// transaction, for changes inside one); the subscription then ends. To keep tracking,
    /// run `withTracking` again, typically from `onChange`, so that the cells read by the new
    /// evaluation are the ones tracked next.
    ///
    /// ```swift
    /// func render() {
    ///     let (text, token) = store.withTracking { "\(row.title): \(row.count)" } onChange: { _ in
    ///         render()  // re-arms with what the new evaluation reads
    ///     }
    ///     self.token = token
    ///     print(text)
    /// }
    /// ```
    ///
    /// - Returns: What `body` returned, and the token of the subscription (cancel it to stop
    ///   early; releasing it stops it too).
    public func withTracking<Result>(
        _ body: () throws -> Result,
        onChange: @escaping (ChangeEvent) -> Void
    ) rethrows -> (value: Result, token: FeedToken) {
        checkIsolation("withTracking")
        let (value, keys) = try registrar.capturingAccess(body)
        let token = feeds.add(keys: Array(keys), columns: nil, isOneShot: true, handler: onChange)
        return (value, token)
    }

    /// Live feed subscriptions, for tests and diagnostics.
    public var feedSubscriptionCount: Int {
        checkIsolation("feedSubscriptionCount")
        return feeds.count
    }

    /// Traps if a cancelled subscription is still indexed; for tests.
    public func checkFeedInvariants() {
        checkIsolation("checkFeedInvariants()")
        feeds.checkInvariants()
    }

    /// Columns named more than once, once each: a subscriber hears each change once.
    private static func unique(_ columns: [Int]) -> [Int] {
        var seen: Set<Int> = []
        return columns.filter { seen.insert($0).inserted }
    }

    static func keys<Model>(of scope: FeedScope<Model>, table: Int) -> ([FeedIndex.Key], Set<Int>?) {
        switch scope.shape {
        case .cells(let key, let columns):
            let row = RowReference(table: table, key: key)
            return (unique(columns).map { .cell(CellReference(row: row, column: $0)) }, Set(columns))
        case .row(let key):
            return ([.row(RowReference(table: table, key: key))], nil)
        case .columns(let columns):
            return (unique(columns).map { .column(table: table, column: $0) }, Set(columns))
        case .table:
            return ([.table(table)], nil)
        case .membership:
            return ([.membership(table)], nil)
        case .children(let key, let relationship):
            return ([.children(RowReference(table: table, key: key), relationship: relationship)], nil)
        }
    }
}
