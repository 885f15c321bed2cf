/// One read of what the store shows, made in stages by ``StoreReads``: it lists the database
/// reads it needs given the answers in hand, and once every one is answered, composes its
/// result in one synchronous run.
///
/// ```swift
/// struct KeyCount: ShownRead {
///     let query: CompiledQuery
///     func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) { needs.add(.count(query)) }
///     func compose(_ answers: ReadAnswers) -> Int { answers.rows(.count(query)).count }
/// }
/// ```
protocol ShownRead<Result>: SendableMetatype {
    associatedtype Result

    /// Lists the database reads the read needs, as far as the answers in hand tell (a later
    /// stage's reads once the earlier stage's are answered). Reads already answered may be
    /// listed again; nothing is listed once all it needs is in hand.
    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) throws

    /// What the store shows, from the answers to every read ``needs(given:into:)`` listed and
    /// from the store as it is now.
    func compose(_ answers: ReadAnswers) throws -> Result

    /// The result in one pass where the store's objects alone show it (no answer of the
    /// database could change it): the common read of a live list's row, on every change. nil
    /// where the read must be made in stages.
    func composedFromObjects() -> Result?
}

extension ShownRead {
    func composedFromObjects() -> Result? { nil }
}

/// What the store holds besides the database, which every read lays over what is committed:
/// its live objects (the registrar's) and its changes not yet committed (write-behind's).
struct ShownState {
    let registrar: ModelRegistrar
    let writeBehind: WriteBehind

    /// Where a table's primary key is in its rows.
    func keyColumn(_ table: Int) -> Int {
        registrar.schemas[table].primaryKeyIndex
    }

    /// Whether a row's current values need its committed row, and it is not in hand.
    func needsCommittedRow(of row: RowReference, given answers: ReadAnswers) -> Bool {
        registrar.identityMap.object(table: row.table, shownAs: row.key) == nil && registrar.deliveredCommittedValues(of: row) == nil
            && answers.committed(row) == nil && KeyPlaceholder.request(in: row.key) == nil && !isAssignedAhead(row)
            && writeBehind.showsCommittedValues(of: row)
    }

    /// Whether a commit gave the row's key to an insert of this store that the store has yet
    /// to apply: until it does, the row shows by that insert's placeholder, not by this key
    /// (as in ``MatchingRows``), so that no second object is made of it. Not where a queued
    /// change decides the row (an insert of the key whose object was deleted, and the delete
    /// discarded, say): that change keeps the row, before the store applies the key as after,
    /// and the inserting object only learns its key (``ModelRegistrar/assignKey(_:toInsert:)``).
    private func isAssignedAhead(_ row: RowReference) -> Bool {
        guard registrar.identityMap.hasUnkeyed, let request = writeBehind.worker.insertRequest(assignedKey: row) else { return false }
        return !writeBehind.decidesRow(row, afterInsert: request)
    }

    /// Lists the committed row a row's current values need, if they need one.
    func needsCurrentValues(of row: RowReference, given answers: ReadAnswers, into needs: inout ReadNeeds) {
        if needsCommittedRow(of: row, given: answers) { needs.committedRow(row) }
    }

    /// A row's current values: its object's, else what is committed with this store's changes
    /// not yet committed applied; nil when there is no row, or when this store deleted it
    /// (committed or not). A row named by its key's placeholder is an insert's whose key the
    /// database has yet to assign: its object's values (the key NULL), while it has one.
    func currentValues(of row: RowReference, given answers: ReadAnswers) -> [SQLValue]? {
        // A row not read (what is queued decides it) holds no batch.
        let committed = answers.committed(row)
        return currentValues(of: row, committed: committed ?? nil, held: committed == nil ? CommitProgress() : answers.held)
    }

    /// A row's current values, given what the database holds for it (nil: no row), read while
    /// it held the batches `held` says (see ``CommitProgress``).
    func currentValues(of row: RowReference, committed: [SQLValue]?, held: CommitProgress) -> [SQLValue]? {
        if let object = registrar.identityMap.object(table: row.table, shownAs: row.key) { return object._$values() }
        guard KeyPlaceholder.request(in: row.key) == nil, !isAssignedAhead(row) else { return nil }
        // Being delivered, the row was just read with its change: newer than any read before,
        // and read after the commits the store has heard of, only those.
        if let delivered = registrar.deliveredCommittedValues(of: row) { return writeBehind.uncommittedValues(of: row, over: delivered) }
        return writeBehind.uncommittedValues(of: row, over: committed, held: held)
    }

    /// A row's current values where they are known from the answers in hand; nil when its
    /// committed row is still to read.
    func knownCurrentValues(of row: RowReference, given answers: ReadAnswers) -> [SQLValue]?? {
        needsCommittedRow(of: row, given: answers) ? nil : .some(currentValues(of: row, given: answers))
    }
}

/// A row as this store shows it, by key; nil when there is none.
struct CurrentRow: ShownRead {
    let shown: ShownState
    let row: RowReference

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        shown.needsCurrentValues(of: row, given: answers, into: &needs)
    }

    func compose(_ answers: ReadAnswers) -> [SQLValue]? {
        shown.currentValues(of: row, given: answers)
    }
}

/// A row as committed, whatever this store holds; nil when the database has none (as for an
/// insert's row named by its key's placeholder, which is not asked of the database).
struct CommittedRow: ShownRead {
    let row: RowReference

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        if answers.committed(row) == nil, KeyPlaceholder.request(in: row.key) == nil { needs.committedRow(row) }
    }

    func compose(_ answers: ReadAnswers) -> [SQLValue]? {
        answers.committed(row) ?? nil
    }
}

/// A row as committed with this store's changes not yet committed laid over it, whatever an
/// object shows (what a row shows without an insert that is being taken back); nil when there
/// is no row then.
struct UncommittedRow: ShownRead {
    let shown: ShownState
    let row: RowReference

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        if answers.committed(row) == nil, KeyPlaceholder.request(in: row.key) == nil { needs.committedRow(row) }
    }

    func compose(_ answers: ReadAnswers) -> [SQLValue]? {
        let committed = answers.committed(row)
        return shown.writeBehind.uncommittedValues(of: row, over: committed ?? nil, held: committed == nil ? CommitProgress() : answers.held)
    }
}

/// Rows as committed, read again to be shown anew (after a discard), with which of this
/// store's batches the database held when they were read: what is still queued is laid over
/// them less those (see ``CommitProgress``).
struct ReloadedRows: ShownRead {
    let rows: [RowReference]

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) {
        for row in rows where answers.committed(row) == nil && KeyPlaceholder.request(in: row.key) == nil { needs.committedRow(row) }
    }

    func compose(_ answers: ReadAnswers) -> (values: [[SQLValue]?], held: CommitProgress) {
        (rows.map { answers.committed($0) ?? nil }, answers.held)
    }
}

/// Several reads made as one: their stages together, their results in their order.
struct EachRead<Read: ShownRead>: ShownRead {
    let reads: [Read]

    func needs(given answers: ReadAnswers, into needs: inout ReadNeeds) throws {
        for read in reads { try read.needs(given: answers, into: &needs) }
    }

    func compose(_ answers: ReadAnswers) throws -> [Read.Result] {
        try reads.map { try $0.compose(answers) }
    }
}
