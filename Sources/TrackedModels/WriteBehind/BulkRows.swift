import Dispatch
import Synchronization

/// Rows streamed into one commit: the store's actor sends them in chunks, and the worker
/// inserts each chunk inside the batch's transaction as it arrives.
///
/// At most ``capacity`` chunks wait between the two, so a bulk insert holds a few thousand
/// rows in memory however many it inserts. The sender suspends while the chunks are full; the
/// worker blocks its own queue (never the store's actor) while they are empty.
///
/// ```swift
/// let rows = BulkRows(table: 0)
/// try await writeBehind.commit(streaming: rows) {     // the worker takes chunks as they come
///     guard await rows.send([[.integer(1), .text("Row 1"), .integer(0)]]) else { return }
///     rows.finish()                                   // no more: the worker commits
/// }
/// ```
final class BulkRows: Sendable {
    // Sendable: every mutable state is in the Mutex; the semaphore is thread-safe.
    /// The table the rows go into; each row holds its values in the table's column order.
    let table: Int
    static let capacity = 4

    private struct State {
        var chunks: [[[SQLValue]]] = []
        var isFinished = false
        var isCancelled = false
        /// Why the sender stopped: a row it cannot send.
        var refusal: StoreError?
        /// The worker stopped taking chunks (committed, failed, or never started).
        var isClosed = false
        var hasStarted = false
        var waitingSender: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// Signalled once per chunk sent, and once by ``finish()``, ``cancel()`` or ``refuse(_:)``.
    private let arrivals = DispatchSemaphore(value: 0)

    init(table: Int) {
        self.table = table
    }

    // MARK: - The sender (the store's actor)

    /// Hands a chunk to the worker, waiting while ``capacity`` chunks are queued.
    ///
    /// - Returns: false when the worker no longer takes rows (its transaction failed, or the
    ///   batch was skipped): stop sending and await the batch's outcome.
    func send(_ chunk: [[SQLValue]]) async -> Bool {
        while true {
            let mustWait = state.withLock { state -> Bool? in
                if state.isClosed { return nil }
                return state.chunks.count >= Self.capacity
            }
            guard let mustWait else { return false }
            guard mustWait else { break }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    guard !state.isClosed, state.chunks.count >= Self.capacity else { return true }
                    state.waitingSender = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        let accepted = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.chunks.append(chunk)
            return true
        }
        if accepted { arrivals.signal() }
        return accepted
    }

    /// Tells the worker that every row was sent: it commits once it has inserted them.
    func finish() {
        state.withLock { $0.isFinished = true }
        arrivals.signal()
    }

    /// Tells the worker to roll back: its next take throws `CancellationError`.
    func cancel() {
        state.withLock { $0.isCancelled = true }
        arrivals.signal()
    }

    /// Tells the worker to roll back because a row cannot be sent: its next take throws
    /// `error`, which the bulk insert then throws.
    func refuse(_ error: StoreError) {
        state.withLock { $0.refusal = error }
        arrivals.signal()
    }

    // MARK: - The worker

    /// The next chunk, waiting for the sender; nil once every row was taken.
    ///
    /// - Throws: `CancellationError` after ``cancel()``, the error given to ``refuse(_:)``.
    func next() throws -> [[SQLValue]]? {
        while true {
            let taken = state.withLock { state -> Result<[[SQLValue]]?, any Error>? in
                if state.isCancelled { return .failure(CancellationError()) }
                if let refusal = state.refusal { return .failure(refusal) }
                if !state.chunks.isEmpty {
                    state.hasStarted = true
                    let chunk = state.chunks.removeFirst()
                    resumeSender(&state)
                    return .success(chunk)
                }
                return state.isFinished ? .success(nil) : nil
            }
            if let taken { return try taken.get() }
            arrivals.wait()
        }
    }

    /// Whether the worker has taken a chunk: a transaction that has cannot be tried again.
    var hasStarted: Bool { state.withLock { $0.hasStarted } }

    /// Stops taking rows, whatever the outcome, and lets a waiting sender go.
    func close() {
        state.withLock { state in
            state.isClosed = true
            state.chunks.removeAll()
            resumeSender(&state)
        }
    }

    private func resumeSender(_ state: inout State) {
        state.waitingSender?.resume()
        state.waitingSender = nil
    }
}
