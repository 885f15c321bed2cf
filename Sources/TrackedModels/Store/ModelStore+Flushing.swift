import Dispatch

/// The store's side of write-behind: what is in flight, who waits for it, what failed.
struct FlushState {
    var lastSubmitted: UInt64 = 0
    var lastFinished: UInt64 = 0
    /// Batches handed to the writer and not yet reported, oldest first.
    var inFlight: [WriteBatch] = []
    var waiters: [(sequence: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    /// After a permanent failure, only an explicit flush tries again.
    var isAutoFlushSuspended = false
    /// Cells with writes in flight (the sum of their increments, and how many plain sets),
    /// built from `inFlight` only when values read back need it, and dropped when it changes.
    var cellsInFlightCache: [CellReference: (delta: Int64, sets: Int)]?
    /// Keys SQLite assigned to inserts, by request, until the insert collects them.
    var assignedKeys: [UInt64: SQLValue] = [:]
    var lastInsertRequest: UInt64 = 0
    var errorContinuations: [AsyncStream<SQLiteError>.Continuation] = []
}

extension ModelStore {
    /// Commits every change made before the call, and returns once it is committed.
    ///
    /// This is the durability acknowledgement: after `flush()` returns, the changes survive the
    /// process being killed (and, with ``Durability/full``, power loss). Changes made while it
    /// waits are committed by a later flush.
    ///
    /// ```swift
    /// row.title = "Renamed"
    /// try await store.flush()
    /// ```
    ///
    /// - Throws: ``SQLiteError`` when the commit fails. The changes stay pending, in order, and
    ///   the next `flush()` tries them again; ``pendingChanges`` shows them.
    public func flush() async throws {
        try checkOpen("flush")
        flushState.isAutoFlushSuspended = false
        submitPending()
        let target = flushState.lastSubmitted
        guard target > flushState.lastFinished else { return }
        try await withCheckedThrowingContinuation { continuation in
            flushState.waiters.append((target, continuation))
        }
    }

    /// Whether changes are waiting to be committed (queued or in flight).
    public var hasPendingChanges: Bool {
        !registrar.pending.isEmpty || !flushState.inFlight.isEmpty
    }

    /// A line for each change not yet committed, in the order they will commit, such as
    /// `update rows 42: count += 1`. For inspecting a store whose flush failed.
    public var pendingChanges: [String] {
        let schemas = registrar.schemas
        return flushState.inFlight.flatMap { $0.operations.map { $0.description(tables: schemas) } }
            + registrar.pending.descriptions(tables: schemas)
    }

    /// Drops every change that is pending and not in flight, after a failure you chose not to
    /// retry. Objects keep their in-memory values; fetch them again from a new store to see
    /// what is stored.
    public func discardPendingChanges() {
        _ = registrar.pending.take()
        flushState.isAutoFlushSuspended = false
    }

    /// Failed commits of the writer, as they happen, including those of flushes nobody awaited
    /// (the interval and threshold flushes). Each access makes a new stream.
    ///
    /// ```swift
    /// Task { for await error in store.writeErrors { logger.error("write-behind: \(error)") } }
    /// ```
    public var writeErrors: AsyncStream<SQLiteError> {
        let (stream, continuation) = AsyncStream.makeStream(of: SQLiteError.self)
        flushState.errorContinuations.append(continuation)
        return stream
    }

    // MARK: - Triggers

    /// Called after a queued change when a flush may be due: flushes at the threshold, else
    /// arms the interval.
    func pendingDidChange() {
        guard !flushState.isAutoFlushSuspended, !registrar.isInTransaction else { return }
        if registrar.pending.count >= configuration.pendingThreshold {
            submitPending()
        } else if !registrar.isFlushScheduled {
            registrar.isFlushScheduled = true
            let mailbox = mailbox!
            DispatchQueue.global().asyncAfter(deadline: .now() + configuration.flushInterval.dispatchInterval) {
                mailbox.send(.flushIntervalElapsed)
            }
        }
    }

    func intervalElapsed() {
        registrar.isFlushScheduled = false
        guard !flushState.isAutoFlushSuspended, !isClosed else { return }
        submitPending()
    }

    /// Hands every pending change to the writer as one batch.
    func submitPending() {
        guard !registrar.pending.isEmpty else { return }
        flushState.lastSubmitted += 1
        let batch = WriteBatch(sequence: flushState.lastSubmitted, operations: registrar.pending.take())
        flushState.inFlight.append(batch)
        flushState.cellsInFlightCache = nil
        writer.submit(batch)
    }

    // MARK: - Outcomes

    func handle(_ outcome: BatchOutcome) {
        guard let batch = flushState.inFlight.first, batch.sequence == outcome.sequence else {
            return  // a batch skipped after a failure: it is pending again already
        }
        switch outcome.result {
        case .committed(let report):
            flushState.inFlight.removeFirst()
            flushState.cellsInFlightCache = nil
            flushState.lastFinished = batch.sequence
            flushState.assignedKeys.merge(report.assignedKeys) { _, new in new }
            reconcileCounters(report.counterValues)
            resumeWaiters { $0 <= batch.sequence ? .success(()) : nil }
        case .failed(let error):
            // Everything in flight goes back in front of newer changes, in order. The writer
            // skips the batches it still has until it is resumed.
            let failed = flushState.inFlight
            flushState.inFlight.removeAll()
            flushState.cellsInFlightCache = nil
            registrar.pending.restore(failed.flatMap(\.operations))
            flushState.lastFinished = flushState.lastSubmitted
            writer.resume()
            flushState.isAutoFlushSuspended = !error.code.isTransient
            resumeWaiters { _ in .failure(error) }
            flushState.errorContinuations.removeAll { continuation in
                if case .terminated = continuation.yield(error) { true } else { false }
            }
            if error.code.isTransient { pendingDidChange() }
        case .skipped:
            break
        }
    }

    private func resumeWaiters(_ result: (UInt64) -> Result<Void, SQLiteError>?) {
        var waiting: [(sequence: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        for waiter in flushState.waiters {
            switch result(waiter.sequence) {
            case .success?: waiter.continuation.resume()
            case .failure(let error)?: waiter.continuation.resume(throwing: error)
            case nil: waiting.append(waiter)
            }
        }
        flushState.waiters = waiting
    }

    func finishErrorStreams() {
        for continuation in flushState.errorContinuations { continuation.finish() }
        flushState.errorContinuations.removeAll()
    }

    // MARK: - Cells in flight and counters

    /// The writes handed to the writer and not yet reported, per cell, so that values read
    /// back (committed counters, other connections' changes) can account for them.
    func cellsInFlight() -> [CellReference: (delta: Int64, sets: Int)] {
        if let cached = flushState.cellsInFlightCache { return cached }
        var cells: [CellReference: (delta: Int64, sets: Int)] = [:]
        for case .update(let row, let writes) in flushState.inFlight.lazy.flatMap(\.operations) {
            for cell in writes {
                let reference = CellReference(row: row, column: cell.column)
                switch cell.write {
                case .add(let delta): cells[reference, default: (0, 0)].delta &+= delta
                case .set: cells[reference, default: (0, 0)].sets += 1
                }
            }
        }
        flushState.cellsInFlightCache = cells
        return cells
    }

    /// After a commit, a counter holds the committed value plus the increments not yet committed:
    /// bumps made meanwhile by other processes show up, as external changes.
    private func reconcileCounters(_ values: [(cell: CellReference, value: SQLValue)]) {
        for (cell, committed) in values {
            guard case .integer(let committedValue) = committed,
                  let object = registrar.object(table: cell.row.table, key: cell.row.key)
            else { continue }
            let inFlight = cellsInFlight()[cell] ?? (0, 0)
            guard inFlight.sets == 0 else { continue }
            var delta = inFlight.delta
            switch registrar.pending.write(to: cell) {
            case nil: break
            case .add(let pending)?: delta &+= pending
            case .set?: continue
            }
            let local = SQLValue.integer(committedValue &+ delta)
            guard object._$values()[cell.column] != local else { continue }
            registrar.applying(.external) {
                try? object._$apply(local, toColumn: cell.column)
            }
        }
    }
}
