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
        guard let unit = writeBehind.discard(change.id) else {
            throw StoreError(code: .notPending, message: "change \(change.id) is not pending (it committed, was discarded, or is being committed right now); read store.pendingChanges again")
        }
        revert([unit])
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

    /// Puts the objects of discarded units back to what is committed, and tells subscribers of
    /// rows a discarded delete had taken away that they are back (a discarded `deleteAll` makes
    /// its table's subscribers re-read).
    private func revert(_ units: [PendingChanges.Unit]) {
        var reloads: [Int: [SQLValue]] = [:]
        var resetTables: Set<Int> = []
        for unit in units {
            var insertedRows: Set<RowReference> = []
            var insertRequests: Set<UInt64> = []
            var deletedRows: [RowReference] = []
            for operation in unit.unit.operations {
                switch operation {
                case .update(let row, _):
                    reloads[row.table, default: []].append(row.key)
                case .insert(let request):
                    if let row = request.row { insertedRows.insert(row) } else { insertRequests.insert(request.id) }
                case .delete(let row):
                    deletedRows.append(row)
                case .deleteAll(let table):
                    resetTables.insert(table)
                }
            }
            for row in deletedRows where !insertedRows.contains(row) && !resetTables.contains(row.table) {
                restoreDeleted(row)
            }
            guard !insertedRows.isEmpty || !insertRequests.isEmpty else { continue }
            // One pass over the unit's objects: those it inserted are forgotten.
            var forgotten: Set<RowReference> = []
            for case let object as any TrackedModel in unit.objects {
                let tracking = object._$tracking
                guard tracking.isAttached else { continue }
                if let request = tracking.insertRequest, insertRequests.contains(request) {
                    registrar.forgetInsert(of: object, table: tracking.table, committed: nil)
                } else if insertedRows.contains(RowReference(table: tracking.table, key: tracking.key)) {
                    let row = RowReference(table: tracking.table, key: tracking.key)
                    let committed = try? committedValues(table: row.table, key: row.key)
                    registrar.forgetInsert(of: object, table: row.table, committed: committed)
                    forgotten.insert(row)
                }
            }
            // An inserted object the program deleted since: its delete went with the insert, so
            // another connection's row of that key, if any, shows again.
            for row in insertedRows.subtracting(forgotten) { restoreDeleted(row) }
        }
        for table in Set(reloads.keys).union(resetTables).sorted() {
            worker.reload(table: table, keys: reloads[table] ?? [], announcingReset: resetTables.contains(table))
        }
    }

    /// Announces a row whose delete was discarded as inserted again, with its values (committed,
    /// with the changes still pending), unless the row is gone anyway.
    private func restoreDeleted(_ row: RowReference) {
        guard registrar.object(table: row.table, key: row.key) == nil,
              let values = try? currentValues(table: row.table, key: row.key)
        else { return }
        registrar.announceRestored(table: row.table, key: row.key, values: values)
    }

    /// Failed commits, as they happen, including those of flushes nobody awaited (the interval
    /// and threshold flushes) and changes the database refused. Each access makes a new stream.
    ///
    /// ```swift
    /// Task { for await error in store.writeErrors { logger.error("write-behind: \(error)") } }
    /// ```
    public var writeErrors: AsyncStream<StoreError> {
        checkIsolation("writeErrors")
        return writeBehind.makeErrorStream()
    }
}
