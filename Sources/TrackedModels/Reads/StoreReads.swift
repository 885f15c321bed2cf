import Foundation

/// What the store shows, and the one place that reads it: committed rows, with this store's
/// changes in flight and pending laid over them, and the values its live objects hold.
///
/// Every read of the store is a ``ShownRead``: it lists the database reads it needs given the
/// answers in hand (in stages: a join's targets are known once the rows that point at them
/// are), and composes what the store shows once it has them all. This type runs them:
/// ``now(_:)`` on the caller's thread, where the engine answers at once (SQLite);
/// ``awaited(_:)`` for either engine, the store's actor free while a server answers
/// (PostgreSQL); ``later(_:then:failed:)`` for paths that cannot wait (live results while a change is
/// delivered). Nothing else knows whether a read must be awaited.
///
/// ```swift
/// let rows = try reads.now(MatchingRows(shown: reads.shown, plan: plan, windowed: true))
/// let same = try await reads.awaited(MatchingRows(shown: reads.shown, plan: plan, windowed: true))
/// ```
final class StoreReads {
    /// What the store holds besides the database: objects and queued changes.
    let shown: ShownState
    /// The engine's reading half (tests count the statements it runs).
    let engine: any EngineReader
    private let isolation: any Actor
    /// How many times committed data reached the store (its commits, other connections'
    /// changes, rows read back): answers fetched before it moved are stale.
    private(set) var deliveries: UInt64 = 0
    private var isClosed = false
    /// Answers gathered ahead for a synchronous write that reads (an awaited delete), used by
    /// the reads it makes; nil otherwise.
    private var prepared: ReadAnswers?
    /// The reads such a write needed that were not gathered (the store changed meanwhile),
    /// where they must be awaited.
    private var missedWhilePrepared: [DatabaseRead] = []
    /// Reads ``later(_:then:failed:)`` started that have not placed their result yet, by number.
    private var readsLater: [UInt64: Task<Void, Never>] = [:]
    private var lastReadLater: UInt64 = 0

    /// Test hooks (see ``ModelStore/Configuration/faultBeforeRead`` and
    /// ``ModelStore/Configuration/beforeAwaitingRead``).
    private let faultBeforeRead: (@Sendable () -> StoreError?)?
    private let beforeAwaitingRead: (@Sendable () -> Void)?

    init(
        engine: any EngineReader, shown: ShownState, isolation: any Actor,
        faultBeforeRead: (@Sendable () -> StoreError?)? = nil, beforeAwaitingRead: (@Sendable () -> Void)? = nil
    ) {
        self.engine = engine
        self.shown = shown
        self.isolation = isolation
        self.faultBeforeRead = faultBeforeRead
        self.beforeAwaitingRead = beforeAwaitingRead
    }

    /// How many rounds an awaited read takes at most (see ``awaited(_:)``).
    static let maximumRounds = 64

    /// Whether a read that needs the database must be awaited: then a live list keeps its
    /// members' objects, which it could not read when asked for one.
    var mustAwait: Bool { !engine.answersAtOnce }

    /// Notes that committed data reached the store's objects.
    func committedDataArrived() {
        deliveries &+= 1
    }

    /// Notes that the store closed: an awaited read in progress ends with an error.
    func close() {
        isClosed = true
    }

    // MARK: - The reads

    /// The rows a query matches, as this store shows them: see ``MatchingRows``.
    func matching(_ plan: CompiledQuery, windowed: Bool) -> MatchingRows {
        MatchingRows(shown: shown, plan: plan, windowed: windowed)
    }

    /// How many rows a query matches within its window: see ``MatchCount``.
    func count(_ plan: CompiledQuery) -> MatchCount {
        MatchCount(shown: shown, plan: plan)
    }

    /// One row as a row of a query: see ``QueryRow``.
    func queryRow(_ plan: CompiledQuery, key: SQLValue) -> QueryRow {
        QueryRow(shown: shown, plan: plan, key: key)
    }

    /// A row as this store shows it: see ``CurrentRow``.
    func current(_ row: RowReference) -> CurrentRow {
        CurrentRow(shown: shown, row: row)
    }

    /// A row as committed: see ``CommittedRow``.
    func committed(_ row: RowReference) -> CommittedRow {
        CommittedRow(row: row)
    }

    /// A row as committed with this store's changes not yet committed: see ``UncommittedRow``.
    func uncommitted(_ row: RowReference) -> UncommittedRow {
        UncommittedRow(shown: shown, row: row)
    }

    /// A statement in the engine's SQL over one table as this store shows it: see ``TableRows``.
    func tableRows(_ table: Int, sql: String, arguments: [SQLValue], returnsModelRows: Bool = false) -> TableRows {
        TableRows(shown: shown, table: table, sql: sql, arguments: arguments, returnsModelRows: returnsModelRows)
    }

    /// The rows of a table whose column holds a key, in key order, as this store shows them: a
    /// parent's children. (`IN`, not the null-safe equality of predicates, so that an index of
    /// the column serves it.)
    func children(table: Int, column: Int, key: SQLValue) -> MatchingRows {
        let schema = shown.registrar.schemas[table]
        return matching(CompiledQuery(
            table: table, schema: schema, predicate: .isIn(.column(column), [key]),
            sort: [CompiledQuery.SortTerm(column: schema.primaryKeyIndex, ascending: true)], columnsRead: [column],
            limit: nil, offset: 0
        ), windowed: false)
    }

    // MARK: - Running reads

    /// What a read shows, read on the caller's thread.
    ///
    /// - Throws: ``StoreError/Code/asyncReadRequired`` where the read needs the database and
    ///   the engine's reads must be awaited; what kept the database from answering.
    func now<Read: ShownRead>(_ read: Read) throws -> Read.Result {
        // Read at once, a read returns or throws (an engine that cannot answer at once refuses
        // in its own words).
        guard let result = try run(read, readingAtOnce: true) else { preconditionFailure("a read made at once gave no result") }
        return result
    }

    /// What a read shows, where it can be read on the caller's thread: nil where it needs the
    /// database and the engine's reads must be awaited (see ``later(_:then:failed:)``).
    func atOnce<Read: ShownRead>(_ read: Read) throws -> Read.Result? {
        try run(read, readingAtOnce: engine.answersAtOnce)
    }

    /// Runs a read on the caller's thread; nil where it needs the database and `readingAtOnce`
    /// is false.
    private func run<Read: ShownRead>(_ read: Read, readingAtOnce: Bool) throws -> Read.Result? {
        if let result = read.composedFromObjects() { return result }
        var answers = prepared ?? ReadAnswers()
        for _ in 0..<Self.maximumRounds {
            var needs = ReadNeeds()
            try read.needs(given: answers, into: &needs)
            // Most reads of a live list's row need nothing from the database (its object shows it).
            let missing = needs.isEmpty ? [] : needs.all.filter { !answers.has($0) }
            if missing.isEmpty { return try read.compose(answers) }
            guard readingAtOnce else { return nil }
            if prepared != nil, !engine.answersAtOnce { missedWhilePrepared += missing }
            // An engine whose reads must be awaited refuses here, reading nothing.
            if engine.answersAtOnce, let fault = faultBeforeRead?() { throw fault }
            let (rows, held) = try answeredNow(missing)
            // Answers in hand that hold other batches in flight than these are read again.
            if !answers.canJoin(held, inFlight: inFlight) { answers = ReadAnswers() }
            answers.take(rows, of: missing, held: held, keyColumn: shown.keyColumn)
        }
        throw StoreError(
            code: .busy,
            message: "a read still needed more of the database after \(Self.maximumRounds) rounds; try again, and report it if it persists",
            mayPass: true
        )
    }

    // MARK: - Reading what this store's commits left

    /// The sequences of this store's batches in flight: a read of the database may hold them
    /// or not (see ``CommitProgress``).
    private var inFlight: some Sequence<UInt64> { shown.writeBehind.inFlight.lazy.map(\.sequence) }

    /// Which of this store's batches the database holds, as the worker last published.
    private var progress: CommitProgress { shown.writeBehind.worker.commitProgress }

    /// The database's answers, read on the caller's thread, and which of this store's batches
    /// in flight they hold: a read that one of them committed during is made again, once the
    /// commit is done (it takes moments, on the worker's thread).
    ///
    /// - Throws: What kept the database from answering; ``StoreError/Code/busy`` where a
    ///   commit took longer than ``commitWait``.
    private func answeredNow(_ missing: [DatabaseRead]) throws -> (rows: [[[SQLValue]]], held: CommitProgress) {
        // With nothing in flight there is nothing the database may hold ahead of the store;
        // an engine whose reads must be awaited refuses at once.
        guard shown.writeBehind.hasBatchesInFlight, engine.answersAtOnce else { return (try engine.answerNow(missing), progress) }
        let deadline = ContinuousClock.now + Self.commitWait
        while true {
            let before = progress
            if before.committing == nil {
                let rows = try engine.answerNow(missing)
                if before.isCertain(until: progress, for: inFlight) { return (rows, before) }
            }
            guard ContinuousClock.now < deadline else { throw Self.commitTookTooLong }
            Thread.sleep(forTimeInterval: 0.000_1)
        }
    }

    /// The database's answers, awaited, and which of this store's batches in flight they
    /// hold; nil where one of them committed during the read (read again). A commit under way
    /// is waited for first.
    private func answered(_ missing: [DatabaseRead]) async throws -> (rows: [[[SQLValue]]], held: CommitProgress)? {
        beforeAwaitingRead?()
        let deadline = ContinuousClock.now + Self.commitWait
        var before = progress
        while before.committing != nil, shown.writeBehind.hasBatchesInFlight {
            guard ContinuousClock.now < deadline else { throw Self.commitTookTooLong }
            try await Task.sleep(for: .microseconds(200))
            before = progress
        }
        let rows = try await engine.answer(missing)
        return before.isCertain(until: progress, for: inFlight) ? (rows, before) : nil
    }

    /// How long a read waits for a commit of this store's under way (a server's may wait out
    /// a lost connection).
    static let commitWait = Duration.seconds(60)

    private static let commitTookTooLong = StoreError(
        code: .busy, message: "a read waited over \(commitWait) for a commit of this store's to end; try again", mayPass: true
    )

    /// What a read shows, the database's answers awaited (the store's actor is free
    /// meanwhile). Answers fetched before the store applied new committed data are fetched
    /// again, so that what it returns is never older than what the store shows; the result is
    /// composed in one synchronous run, from the store as it is then.
    ///
    /// - Parameter answers: Answers in hand, kept with those this read fetches.
    /// - Throws: ``StoreError/Code/busy`` when committed data kept arriving for
    ///   ``maximumRounds`` rounds; ``StoreError/Code/closed`` when the store closed meanwhile.
    func awaited<Read: ShownRead>(_ read: Read, keeping answers: inout ReadAnswers) async throws -> Read.Result {
        var overtaken = 0
        for _ in 0..<Self.maximumRounds {
            var needs = ReadNeeds()
            try read.needs(given: answers, into: &needs)
            // Most reads of a live list's row need nothing from the database (its object shows it).
            let missing = needs.isEmpty ? [] : needs.all.filter { !answers.has($0) }
            if missing.isEmpty { return try read.compose(answers) }
            try Task.checkCancellation()
            let askedAt = deliveries
            if let fault = faultBeforeRead?() { throw fault }
            let answered = try await self.answered(missing)
            if isClosed { throw StoreError.closed(operation: "read") }
            guard deliveries == askedAt, let (rows, held) = answered, answers.canJoin(held, inFlight: inFlight) else {
                // Committed data arrived meanwhile (or this store's commit, which the read may
                // or may not hold): what was read before may be stale.
                overtaken += 1
                answers = ReadAnswers()
                continue
            }
            answers.take(rows, of: missing, held: held, keyColumn: shown.keyColumn)
        }
        throw StoreError(
            code: .busy,
            message: "the read did not settle in \(Self.maximumRounds) rounds (\(overtaken) overtaken by data committed meanwhile, by other connections or this store); try again",
            mayPass: true
        )
    }

    /// ``awaited(_:keeping:)`` with no answers in hand.
    func awaited<Read: ShownRead>(_ read: Read) async throws -> Read.Result {
        var answers = ReadAnswers()
        return try await awaited(read, keeping: &answers)
    }

    /// Runs a synchronous write that reads (an awaited delete whose rules read the children),
    /// its reads answered from answers gathered ahead by `gather`. Where the write needs a
    /// read that was not gathered (the store changed while the rest were read), it throws
    /// before it keeps anything, and is made again once that read is answered too. Answers are
    /// of one moment: when committed data arrives while they are read, all are gathered again.
    ///
    /// - Throws: ``StoreError/Code/busy`` after ``maximumRounds`` rounds.
    func answering<Result>(gathering gather: () async throws -> ReadAnswers, _ body: () throws -> Result) async throws -> Result {
        var rounds = 0
        gathering: while rounds < Self.maximumRounds {
            let startedAt = deliveries
            var answers = try await gather()
            // No await between this check and the write: it runs on the answers' moment.
            while deliveries == startedAt, rounds < Self.maximumRounds {
                rounds += 1
                switch try attempt(body, answering: answers) {
                case .done(let result):
                    return result
                case .missed(let missed):
                    if let fault = faultBeforeRead?() { throw fault }
                    let answered = try await self.answered(missed)
                    if isClosed { throw StoreError.closed(operation: "write") }
                    // A commit of this store's the read may or may not hold: gathered again.
                    guard let (rows, held) = answered, answers.canJoin(held, inFlight: inFlight) else { continue gathering }
                    answers.take(rows, of: missed, held: held, keyColumn: shown.keyColumn)
                }
            }
        }
        throw StoreError(code: .busy, message: "the rows kept changing under the write (\(Self.maximumRounds) rounds); try again", mayPass: true)
    }

    /// What one run of a write over gathered answers came to.
    private enum Attempt<Result> {
        case done(Result)
        /// It threw for want of these reads, keeping nothing.
        case missed([DatabaseRead])
    }

    /// Runs a write once, its reads answered from `answers` first (and only for this run).
    private func attempt<Result>(_ body: () throws -> Result, answering answers: ReadAnswers) throws -> Attempt<Result> {
        let outer = (prepared, missedWhilePrepared)
        prepared = answers
        missedWhilePrepared = []
        defer { (prepared, missedWhilePrepared) = outer }
        do {
            return .done(try body())
        } catch let error as StoreError where error.code == .asyncReadRequired && !missedWhilePrepared.isEmpty {
            return .missed(missedWhilePrepared)
        }
    }

    /// Reads later on the store's actor, awaiting the database, and hands the result to `then`
    /// there: for the paths that keep live results current, which run synchronously while a
    /// change is delivered. Nothing happens when the store closed meanwhile; when the read
    /// failed, `failed` is told why (each caller says what it left out of date, on
    /// ``ModelStore/writeErrors``).
    func later<Read: ShownRead>(_ read: Read, then: @escaping (Read.Result) -> Void, failed: @escaping (any Error) -> Void) {
        lastReadLater += 1
        let later = ReadLater(reads: self, number: lastReadLater, read: read, then: then, failed: failed)
        let isolation = isolation
        readsLater[lastReadLater] = Task { await later.run(on: isolation) }
    }

    /// Returns once every read ``later(_:then:failed:)`` started has placed its result (also those
    /// they started in turn).
    func placedReadsLater() async {
        while let (number, task) = readsLater.first {
            await task.value
            readsLater[number] = nil
        }
    }

    /// A read that ``later(_:then:failed:)`` runs in a task of its own.
    private struct ReadLater<Read: ShownRead>: @unchecked Sendable {
        // @unchecked Sendable: the read side, the read and the closure belong to the store's
        // actor, and are used only in `run(on:)`, which runs isolated to that actor.
        let reads: StoreReads
        let number: UInt64
        let read: Read
        let then: (Read.Result) -> Void
        let failed: (any Error) -> Void

        func run(on actor: isolated any Actor) async {
            defer { reads.readsLater[number] = nil }
            guard !reads.isClosed else { return }
            let result: Read.Result
            do {
                result = try await reads.awaited(read)
            } catch {
                if !reads.isClosed { failed(error) }
                return
            }
            guard !reads.isClosed else { return }
            then(result)
        }
    }
}
