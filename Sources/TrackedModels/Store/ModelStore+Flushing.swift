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
    /// - Throws: ``StoreError`` (``StoreError/Code/busy``, ``StoreError/Code/storageFull``,
    ///   ``StoreError/Code/ioFailure`` ...) when the commit failed as a whole: every change stays
    ///   pending, in order, and the next `flush()` tries again.
    ///   ``StoreError`` (``StoreError/Code/changeRejected``) while the database refuses a change
    ///   (a constraint, a NaN): the other changes committed, the refused one and later changes
    ///   to its rows stay pending; ``pendingChanges`` lists them, and assigning a valid value or
    ///   ``discard(_:)`` resolves it.
    public func flush() async throws {
        try checkOpen("flush")
        try await writeBehind.flush()
    }

    /// Whether changes are waiting to be committed (pending or in flight).
    public var hasPendingChanges: Bool {
        checkIsolation("hasPendingChanges")
        return writeBehind.hasChanges
    }

    /// Every change not yet committed, in the order it will commit: one entry per atomic unit,
    /// with the database's error for a unit it refused.
    ///
    /// ```swift
    /// for change in store.pendingChanges { print(change) }   // update rows 42: count += 1
    /// ```
    public var pendingChanges: [PendingChange] {
        checkIsolation("pendingChanges")
        return writeBehind.pendingChanges
    }

    /// Gives up on one pending change (typically one the database refused): it is dropped, and
    /// its objects show what is committed again. An object whose insert is discarded is
    /// detached; the row of a discarded delete stays (fetch it again to get an object for it).
    ///
    /// ```swift
    /// if let refused = store.pendingChanges.first(where: { $0.error != nil }) {
    ///     try store.discard(refused)
    /// }
    /// ```
    ///
    /// - Throws: ``StoreError`` (``StoreError/Code/notPending``) when the change is in flight or
    ///   no longer pending.
    public func discard(_ change: PendingChange) throws {
        try checkOpen("discard")
        guard let discarded = writeBehind.discard(change.id) else {
            throw StoreError(code: .notPending, message: "change \(change.id) is not pending (it committed, was discarded, or is being committed right now); read store.pendingChanges again")
        }
        revert(discarded)
    }

    /// Gives up on every pending change that is not being committed right now; objects show
    /// what is committed again, as with ``discard(_:)``.
    ///
    /// ```swift
    /// store.discardPendingChanges()
    /// ```
    public func discardPendingChanges() {
        checkIsolation("discardPendingChanges()")
        revert(writeBehind.discardAll())
    }

    /// Puts the objects of discarded units back to what is committed, tells subscribers of
    /// rows a discarded delete had taken away that they are back (a discarded `deleteAll` makes
    /// its table's subscribers re-read), and those of rows no object shows that the cells a
    /// discarded update had changed are back.
    ///
    /// Where those rows must be read from a server, they are read afterwards: subscribers hear
    /// the discarded insert go, then the committed row come back once it is read.
    private func revert(_ discarded: DiscardedChanges) {
        // The rows that cannot be read at once are announced once read.
        var unread: [RowReference] = []
        // Rows read and found gone, which a discarded insert had shown without an object (with
        // the values it showed).
        var gone: [(row: RowReference, shown: [SQLValue])] = []
        func readAtOnce(_ row: RowReference, _ read: some ShownRead<[SQLValue]?>) -> [SQLValue]? {
            guard let values = try? reads.atOnce(read) else {
                if !unread.contains(row) { unread.append(row) }
                return nil
            }
            return values
        }
        registrar.applyDiscarded(discarded, reading: RowReads(
            uncommitted: { [unowned self] row in readAtOnce(row, reads.uncommitted(row)) },
            current: { [unowned self] row in
                let values = readAtOnce(row, reads.current(row))
                if values == nil, !unread.contains(row), let shown = discarded.shownWithoutObject[row] { gone.append((row, shown)) }
                return values
            }
        ))
        for (row, shown) in gone { registrar.announceRowRestored(row, values: nil, shown: shown) }
        for row in unread { announceRestoredOnceRead(row, shown: discarded.shownWithoutObject[row]) }
        // A row whose discarded write pointed a to-one at a new object shows NULL before and
        // after, but no longer reaches that object: live results judge it again.
        for (row, cells) in discarded.shown where cells.values.contains(where: \.holdsKeyPlaceholder) {
            outbox.postReevaluation(table: row.table, key: row.key)
        }
        // In the order the updates were made; not rows the steps above announced already, nor
        // tables whose subscribers re-read.
        var announced = Set(discarded.steps.compactMap(\.row))
        for table in discarded.reloads.keys.sorted() where !discarded.resetTables.contains(table) {
            for key in discarded.reloads[table] ?? [] {
                let row = RowReference(table: table, key: key)
                guard KeyPlaceholder.request(in: key) == nil, announced.insert(row).inserted, let cells = discarded.shown[row],
                      registrar.identityMap.object(table: table, key: key) == nil
                else { continue }
                announceUndone(row, shown: cells)
            }
        }
        for table in Set(discarded.reloads.keys).union(discarded.resetTables).sorted() {
            // A row changed by its key's placeholder is an insert's, still to commit: its object
            // shows what is queued for it; the others are read back (at once where the engine
            // answers at once, so that the objects show them when the discard returns).
            let keys = discarded.reloads[table] ?? []
            for request in keys.compactMap(KeyPlaceholder.request(in:)) { registrar.reshowInsert(request) }
            let rows = keys.filter { KeyPlaceholder.request(in: $0) == nil }.map { RowReference(table: table, key: $0) }
            let read = ReloadedRows(rows: rows)
            let announcingReset = discarded.resetTables.contains(table)
            let apply = { [weak self] (read: (values: [[SQLValue]?], held: CommitProgress)) -> Void in
                self?.registrar.applyReloaded(
                    table: table, rows: zip(rows, read.values).map { (key: $0.key, values: $1) }, held: read.held, announcingReset: announcingReset, origin: .local
                )
            }
            // A read that fails now is made again later, awaited; one that fails then too leaves
            // the objects as they are, says so on writeErrors, and still announces the reset a
            // discarded change of the whole table owes (live lists read their rows again).
            let name = registrar.schemas[table].name
            if let values = try? reads.atOnce(read) { apply(values) } else {
                reads.later(read, then: apply, failed: { [weak self] error in
                    guard let self else { return }
                    if announcingReset { outbox.postReset(table: table, origin: .local) }
                    writeBehind.errors.reportFailedRead(error, "rows of \(name) came back when their pending changes were discarded, but could not be read; their objects may still show the discarded changes: close the store and open it again to read them afresh")
                })
            }
        }
    }

    /// Announces a row a discard brought back once it is read from the server. A row brought
    /// back again before that is announced once, by the last read (the freshest), against
    /// what subscribers were told last: what the last discard found shown of it (between two
    /// discards of a row, its subscribers heard it inserted or deleted again). A read that
    /// fails tells live results to judge the row again, and the program, on `writeErrors`,
    /// that its subscribers were not told.
    private func announceRestoredOnceRead(_ row: RowReference, shown: [SQLValue]?) {
        var awaiting = restoresAwaitingRead[row] ?? RestoreAwaitingRead()
        awaiting.reads += 1
        awaiting.shown = shown
        restoresAwaitingRead[row] = awaiting
        func settle() -> RestoreAwaitingRead? {
            guard var awaiting = restoresAwaitingRead[row] else { return nil }
            awaiting.reads -= 1
            restoresAwaitingRead[row] = awaiting.reads > 0 ? awaiting : nil
            return awaiting.reads > 0 ? nil : awaiting
        }
        reads.later(reads.current(row), then: { [weak self] values in
            guard let self, let settled = settle() else { return }
            // No object showed the row when it was discarded: one that does now was made since.
            registrar.announceRowRestored(row, values: values, shown: settled.shown, objectsMadeSince: true)
        }, failed: { [weak self] error in
            guard let self, settle() != nil else { return }
            outbox.postReevaluation(table: row.table, key: row.key)
            writeBehind.errors.reportFailedRead(error, "row \(row.key) of \(registrar.schemas[row.table].name) came back when its pending changes were discarded, but it could not be read; its subscribers were not told: fetch it again")
        })
    }

    /// Tells the subscribers of a row no object shows that a discarded update's cells are back
    /// to what the row holds; once it is read, where it must be read from a server.
    private func announceUndone(_ row: RowReference, shown cells: [Int: DiscardedChanges.ShownCell]) {
        // A row whose return is still to be announced is announced as it is then, these cells
        // undone: its subscribers know it gone, not these cells.
        guard restoresAwaitingRead[row] == nil else { return }
        // A read that fails now is made again later, awaited.
        if let current = try? reads.atOnce(reads.current(row)) {
            registrar.announceUndone(row, shown: cells, current: current)
        } else {
            reads.later(reads.current(row), then: { [weak self] values in
                self?.registrar.announceUndone(row, shown: cells, current: values)
            }, failed: { [weak self] error in
                guard let self else { return }
                // Live lists judge the row again (their own read may fare better).
                outbox.postReevaluation(table: row.table, key: row.key)
                writeBehind.errors.reportFailedRead(error, "changes to row \(row.key) of \(registrar.schemas[row.table].name) were discarded, but the row could not be read; their subscribers were not told: fetch it again")
            })
        }
    }

    /// Failed commits, as they happen, including those of flushes nobody awaited (the interval
    /// and threshold flushes) and changes the database refused; and what a property's setter or
    /// getter could not throw: a relationship the store refused to point at an object (another
    /// store's, or a new one with the key of an object it has; the relationship was left as it
    /// was), a to-many whose children could not be read, or a row a discard brought back that
    /// could not be read to tell its subscribers. Also what the store read of its own accord
    /// and could not (awaited from a server): a live list that could not read the rows it must
    /// judge says so once, and reads them all again at its next change. Each access makes a new
    /// stream.
    ///
    /// ```swift
    /// Task { for await error in store.writeErrors { logger.error("write-behind: \(error)") } }
    /// ```
    public var writeErrors: AsyncStream<StoreError> {
        checkIsolation("writeErrors")
        return writeBehind.errors.makeStream()
    }
}

/// A row a discard brought back, while its announcement waits for the row to be read.
struct RestoreAwaitingRead {
    /// The reads started for it and not yet returned: the last to return announces it.
    var reads = 0
    /// What a discarded insert had shown of the row to its subscribers, if it had.
    var shown: [SQLValue]?
}
