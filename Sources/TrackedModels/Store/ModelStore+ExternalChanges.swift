extension ModelStore {
    /// Checks for other connections' commits now and returns once what they changed has been
    /// applied and delivered, instead of waiting for the next poll.
    ///
    /// ```swift
    /// try await store.refreshExternalChanges()   // for example when the app comes to the front
    /// ```
    public func refreshExternalChanges() async throws {
        try checkOpen("refreshExternalChanges()")
        lastPoll += 1
        let id = lastPoll
        await withCheckedContinuation { continuation in
            pollWaiters[id] = continuation
            worker.pollNow(id)
        }
        // On PostgreSQL, live results place what they had to read back once it is back.
        await reads.placedReadsLater()
    }
}
