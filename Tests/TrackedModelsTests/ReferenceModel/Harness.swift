import Foundation
import PropertyBased
import Synchronization
import Testing
@testable import TrackedModels

/// One generated step: which operation (`kind`, smaller is simpler) and two numbers it decodes
/// its arguments from, given the state the program has reached.
struct Step: Sendable, CustomStringConvertible {
    var kind: Int
    var a: UInt64
    var b: UInt64

    var description: String { "(\(kind), \(a), \(b))" }
}

/// A step the store did not take as the reference says it must: ends the program.
struct Divergence: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Runs a generated program against a real store on a real database (a SQLite file, or a
/// PostgreSQL database of its own) and against the reference, checking after every step that
/// they agree.
@MainActor
final class Harness {
    let engine: TestEngine
    let directory: TemporaryDirectory
    /// The file's path or the database's URL.
    let database: String
    var reference: Reference
    var store: ModelStore?
    /// Another connection to the database: it commits as another process would, and reads
    /// what the database holds.
    let other: OtherConnection
    /// The objects the program holds, by key (the current object of each row).
    var objects: [Int64: Item] = [:]
    /// Inserted objects whose key SQLite has yet to assign, by insert number.
    var newObjects: [Int: Item] = [:]
    /// Objects the program still holds but the store no longer manages.
    var detached: [Item] = []
    /// Keys of rows whose object the program let go of (it may hold another since).
    var released: Set<Int64> = []
    /// Live lists of the program's queries, by the query's position in ``queries``: one made at
    /// open for each, and those the program makes at later steps (inside transactions too).
    var lists: [LiveList] = []
    /// Feeds of every scope the program subscribed to, at any step (see Harness+Feeds.swift).
    var feeds: [ScopedFeed] = []
    /// What feed handlers wrote while the store delivered, not yet recorded in the reference:
    /// through which object, and the title.
    var handlerWrites: [(object: Item, value: SQLValue)] = []
    /// A generated predicate and order, kept live too: its expected rows are SQLite's answer
    /// over the rows the reference shows, in ``scratch``.
    let generatedQueries: [CompiledQuery]
    /// The live list of each generated query; nil where PostgreSQL cannot compute it.
    var generatedLists: [FetchedResults<Item>?] = []
    /// Live aggregates over the generated queries (see Harness+Aggregates.swift).
    var aggregates: [AggregateWatch] = []
    /// Sectioned results and grouped aggregates (see Harness+Sections.swift).
    var groups: [GroupsWatch] = []
    /// Changes of rows waiting for their keys since the last check (they reach live forms but
    /// no table feed), and the subscription that counts them.
    var waitingRowChanges = 0
    var waitingRowToken: FeedToken?
    /// An in-memory table that holds the rows the reference shows, to ask SQLite about them.
    let scratch: Connection
    var events: [ChangeEvent] = []
    /// Each held object's `linkedFrom` as the last check read it, under Observation: a later
    /// check that finds it changed requires that its observers heard something.
    var linkedFromWatches: [Int64: LinkedFromWatch] = [:]

    /// Each held object's `title` as the last check read it under the store's dependency
    /// capture (`withTracking`): a later check that finds it changed requires that the
    /// one-shot subscriber heard something.
    var titleWatches: [Int64: TitleWatch] = [:]

    struct TitleWatch {
        let object: Item
        let title: String
        let fed: HeardFlag
        let token: FeedToken
    }

    struct LinkedFromWatch {
        let object: Item
        let members: [String]
        /// Set by Observation, and by a `withTracking` feed of the same read.
        let heard: HeardFlag
        let fed: HeardFlag
        let token: FeedToken
    }

    /// A live list of one of the program's queries, and its keys as its `onChange` changes
    /// tell them (by their offsets, their moves and their difference, which must agree):
    /// applied one after another to the keys it had when made, they must give the
    /// keys it holds, until the program cancels that subscription (then it must tell nothing
    /// more). Every other list also follows its `differences` stream, which must tell the same.
    @MainActor final class LiveList {
        let query: Int
        let results: FetchedResults<Item>
        /// nil once a difference did not apply to the keys told before.
        private(set) var toldKeys: [Int64?]?
        /// The keys the `differences` stream told, applied in turn; nil for a list not streamed.
        private(set) var streamedKeys: [Int64?]??
        private var subscription: FetchedResults<Item>.Subscription?
        /// What ``toldKeys`` was when the program cancelled the `onChange` subscription.
        private(set) var toldWhenCancelled: [Int64?]??
        private var streaming: Task<Void, Never>?

        init(query: Int, results: FetchedResults<Item>, streamed: Bool) {
            self.query = query
            self.results = results
            toldKeys = results.keys
            subscription = results.onChange { [unowned self, unowned results] change in
                toldKeys = toldKeys?.applying(change, shown: results.keys)
            }
            guard streamed else { return }
            streamedKeys = .some(results.keys)
            let differences = results.differences
            streaming = Task { [weak self] in
                for await change in differences {
                    guard let self else { return }
                    streamedKeys = streamedKeys.map { $0?.applying(change.difference) }
                }
            }
        }

        /// Cancels the `onChange` subscription: ``toldKeys`` stays what it was told until now.
        func stopTelling() {
            subscription?.cancel()
            toldWhenCancelled = .some(toldKeys)
        }

        deinit { streaming?.cancel() }
    }

    /// Lets tasks the program runs on the main actor (consumers of the store's streams) take
    /// what was sent to them, until `done` holds or ten seconds have passed.
    func letStreamsCatchUp(until done: () -> Bool) async {
        // Yields first (most streams catch up in a few); then sleeps, up to a deadline long
        // enough for a machine busy with other work (a loaded CI runner, a parallel soak).
        for _ in 0..<200 where !done() { await Task.yield() }
        let deadline = ContinuousClock.now + .seconds(10)
        while !done(), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Set by an Observation `onChange`.
    final class HeardFlag: @unchecked Sendable {
        // Set and read on the main actor only: onChange runs synchronously inside the setter.
        var value = false
    }
    /// How many transactions the running operation is inside.
    var transactionDepth = 0
    /// Keys whose objects the program takes hold of at the end of the step (see ``run(_:)``).
    var keysToHold: Set<Int64> = []
    var token: FeedToken?
    /// What subscribers have heard so far, row by row.
    var heard: [Int64: [SQLValue]] = [:]
    /// Whether the current step may make subscribers re-read the table (a committed deleteAll).
    var mayReset = false
    /// Whether the current step made several changes outside a transaction: each is heard as
    /// it is made, even where together they change nothing.
    var madeSeveralChanges = false
    /// Whether the program leaves objects whose key the database has yet to assign alone (see
    /// ``flushWithChangesInFlight(_:_:)``).
    var leavesNewObjectsAlone = false
    /// Keys the current step inserted while a row of that key, not the program's, was there.
    var collidingKeys: Set<Int64> = []
    /// Keys whose row another connection deleted and inserted again in the current step.
    var replacedKeys: Set<Int64> = []
    /// The program as run so far, one line per operation.
    var transcript: [String] = []
    /// A failure the store's next commit meets just before it commits, once.
    let fault = FaultSlot()
    /// A failure to inject into the store's next read of the database.
    let readFault = FaultSlot()
    /// What the program writes while an awaited operation of its waits for the database.
    let interleavedWrite = InterleavedWrite()
    /// Holds the worker at its next commit: just before it, or right after it (before the store
    /// hears of it).
    let commitHold = CommitHold()
    /// What the store logs (at every level, so that every message is made).
    let log = LogRecorder()
    /// What the `writeErrors` streams of the program's stores published, in order.
    var writeErrorsHeard: [StoreError] = []
    /// The task that takes the open store's `writeErrors` into ``writeErrorsHeard``.
    var writeErrorsListener: Task<Void, Never>?
    /// What the log lacked after the last step, if anything: the next check reports it.
    var logGap: String?

    /// A query the program keeps live, with the reference's reading of it: which rows match,
    /// and by which columns they sort (then by key).
    struct Query {
        var name: String
        var descriptor: FetchDescriptor<Item>
        var matches: ([SQLValue]) -> Bool
        var sort: [(column: Int, ascending: Bool)]
    }

    /// The queries a program may keep live; each program takes four of them, chosen by its table
    /// seed. Text compares by Unicode scalars; NULL sorts first; NaN matches no comparison.
    static let queries: [Query] = [
        Query(name: "count > 0, by count descending", descriptor: FetchDescriptor(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)]),
              matches: { Values.compare($0[2], .integer(0)) > 0 }, sort: [(2, false)]),
        Query(name: "note == nil, by title", descriptor: FetchDescriptor(predicate: #Predicate { $0.note == nil }, sortBy: [SortDescriptor(\.title)]),
              matches: { $0[3] == .null }, sort: [(1, true)]),
        Query(name: "title >= \"m\", by count, offset 1, limit 5", descriptor: {
            var descriptor = FetchDescriptor<Item>(predicate: #Predicate { $0.title >= "m" }, sortBy: [SortDescriptor(\.count)])
            descriptor.fetchOffset = 1
            descriptor.fetchLimit = 5
            return descriptor
        }(), matches: { Values.compare($0[1], .text("m")) >= 0 }, sort: [(2, true)]),
        Query(name: "flag && score < 100, by note", descriptor: FetchDescriptor(predicate: #Predicate { $0.flag && $0.score < 100 }, sortBy: [SortDescriptor(\.note)]),
              matches: { row in row[6] != .integer(0) && !isNaN(row[4]) && Values.compare(row[4], .real(100)) < 0 }, sort: [(3, true)]),
        Query(name: "title < \"e\u{301}\", by title descending", descriptor: FetchDescriptor(predicate: #Predicate { $0.title < "e\u{301}" }, sortBy: [SortDescriptor(\.title, order: .reverse)]),
              matches: { Values.compare($0[1], .text("e\u{301}")) < 0 }, sort: [(1, false)]),
        Query(name: "note != nil && count <= 5, by score, limit 3", descriptor: {
            var descriptor = FetchDescriptor<Item>(predicate: #Predicate { $0.note != nil && $0.count <= 5 }, sortBy: [SortDescriptor(\.score)])
            descriptor.fetchLimit = 3
            return descriptor
        }(), matches: { $0[3] != .null && Values.compare($0[2], .integer(5)) <= 0 }, sort: [(4, true)]),
        Query(name: "payload == nil || flag, by count descending, then title", descriptor: FetchDescriptor(predicate: #Predicate { $0.payload == nil || $0.flag }, sortBy: [SortDescriptor(\.count, order: .reverse), SortDescriptor(\.title)]),
              matches: { $0[5] == .null || $0[6] != .integer(0) }, sort: [(2, false), (1, true)]),
        Query(name: "count < 0 || note == nil, by title (.lexical) descending", descriptor: FetchDescriptor(predicate: #Predicate { $0.count < 0 || $0.note == nil }, sortBy: [SortDescriptor(\.title, comparator: .lexical, order: .reverse)]),
              matches: { Values.compare($0[2], .integer(0)) < 0 || $0[3] == .null }, sort: [(1, false)]),
        Query(name: "score >= -1e300, all, by id descending", descriptor: FetchDescriptor(predicate: #Predicate { $0.score >= -1e300 }, sortBy: [SortDescriptor(\.id, order: .reverse)]),
              matches: { !isNaN($0[4]) && Values.compare($0[4], .real(-1e300)) >= 0 }, sort: [(0, false)]),
    ]

    private static func isNaN(_ value: SQLValue) -> Bool {
        if case .real(let real) = value { real.isNaN } else { false }
    }

    /// The queries this program keeps live.
    let queries: [Query]

    /// Makes the program's database and creates its table through the other connection.
    static func make(declaration: TableDeclaration) async throws -> Harness {
        let directory = try TemporaryDirectory()
        let database = try await declaration.engine.makeDatabase(in: directory)
        let other = try await OtherConnection.open(declaration.engine, database)
        try await other.commit([(declaration.sql, [])])
        return try Harness(declaration: declaration, directory: directory, database: database, other: other)
    }

    private init(declaration: TableDeclaration, directory: TemporaryDirectory, database: String, other: OtherConnection) throws {
        engine = declaration.engine
        self.directory = directory
        self.database = database
        self.other = other
        reference = Reference(declaration: declaration)
        var random = Xoshiro(seed: declaration.seed)
        queries = Array(Self.queries.shuffled(using: &random).prefix(4))
        var generator = ExpressionGenerator(seed: random.next(), rows: [], linked: true, mixesKinds: declaration.engine == .sqlite)
        let predicate = generator.boolean(depth: 2)
        var sort = generator.sort()
        let width = Item._$schema.columns.count
        if !predicate.columns.union(sort.map(\.column)).contains(where: { $0 >= width }) {
            // Every program reads through `link`, as `SortDescriptor(\.link?.count)` does.
            sort.insert(CompiledQuery.SortTerm(column: width + Item.Column.count.rawValue, ascending: random.chance(1, in: 2)), at: 0)
        }
        // Two more, deeper, that may read through `link` or not.
        var more = ExpressionGenerator(seed: random.next(), rows: [], linked: true, mixesKinds: declaration.engine == .sqlite)
        generatedQueries = [ExpressionGenerator.query(predicate: predicate, sort: sort)]
            + (0..<2).map { _ in ExpressionGenerator.query(predicate: more.boolean(depth: 3), sort: more.sort()) }
        scratch = try Connection(filename: Connection.inMemoryFilename(), mode: .readWriteCreate, busyTimeout: .seconds(1))
        try scratch.execute(declaration.scratchSQL)
    }

    static var configuration: ModelStore.Configuration {
        var configuration = ModelStore.Configuration()
        configuration.flushInterval = .seconds(3_600)
        configuration.pendingThreshold = .max
        configuration.externalChangePollInterval = .seconds(3_600)
        configuration.wakesOnFileChanges = false
        configuration.busyTimeout = .milliseconds(20)
        configuration.maxBusyRetries = 0
        return configuration
    }

    /// Opens the store; false (after checking the refusal) when the reference says the table
    /// cannot be honoured.
    func open() async throws -> Bool {
        do {
            var configuration = Self.configuration
            configuration.faultBeforeCommit = { [fault, commitHold] in
                commitHold.holdIfArmed(at: .beforeItsCommit)
                return fault.take()
            }
            configuration.faultBeforeRead = { [readFault] in readFault.take() }
            configuration.beforeAwaitingRead = { [interleavedWrite] in MainActor.assumeIsolated { interleavedWrite.readAwaits() } }
            configuration.afterCommit = { [commitHold] in commitHold.holdIfArmed(at: .afterItsCommit) }
            configuration.logger = log.logger
            let store = try await ModelStore.open(engine.location(database), models: [Item.self], configuration: configuration)
            guard reference.declaration.databaseAssignsKeys else {
                throw Divergence(message: "the store opened a table whose key is not the rowid, although the model leaves keys to SQLite: \(reference.declaration)")
            }
            self.store = store
        } catch let error as StoreError where error.code == .schemaMismatch && !reference.declaration.databaseAssignsKeys {
            return false
        }
        guard let store else { return false }
        let errors = store.writeErrors
        writeErrorsListener = Task { [weak self] in
            for await error in errors { self?.writeErrorsHeard.append(error) }
        }
        token = try store.subscribe(to: .table(Item.self)) { [weak self] event in self?.events.append(event) }
        lists = []
        feeds = []
        // A third of the programs start without the fixed queries' lists: those keep an object
        // for nearly every row, and rows no object shows take paths of their own.
        for (index, query) in queries.enumerated() where reference.declaration.seed % 3 != 0 {
            lists.append(LiveList(query: index, results: engine == .sqlite ? try store.results(for: query.descriptor) : try await store.async.results(for: query.descriptor), streamed: index % 2 == 1))
        }
        generatedLists = []
        for query in generatedQueries {
            generatedLists.append(try await generatedQueryRows(query).map { FetchedResults(store: store, plan: query, matching: $0) })
        }
        // The last shows a window from the start (moved as the program runs).
        let window = Self.window(reference.declaration.seed >> 8)
        try generatedLists.last??.moveWindow(offset: window.offset, limit: window.limit)
        aggregates = try await makeAggregates(store)
        groups = try await makeGroups(store)
        heard = reference.shownRows
        return true
    }

    /// The rows a generated query matches, read as a fetch reads them; nil where PostgreSQL
    /// cannot compute it (an integer overflow, which SQLite turns into a real) or take it (a
    /// text constant with NUL).
    func generatedQueryRows(_ query: CompiledQuery, windowed: Bool = false) async throws -> [[SQLValue]]? {
        let store = try live
        do {
            return try await store.reads.awaited(store.reads.matching(query, windowed: windowed))
        } catch let error as StoreError where engine == .postgres && error.code == .valueNotStorable
            && (error.message.contains("out of range") || error.message.contains("0x00")) {
            return nil
        }
    }

    /// The object of a key, as `find` gives it: synchronously on SQLite (unless `awaited`),
    /// awaited on PostgreSQL.
    func find(_ key: Int64, awaited: Bool = false) async throws -> Item? {
        let store = try live
        return engine == .sqlite && !awaited ? try store.find(Item.self, key: key) : try await store.async.find(Item.self, key: key)
    }

    /// The object of a key where the program cannot await (inside a transaction): nil when
    /// PostgreSQL would have to be asked.
    func findWithoutWaiting(_ key: Int64) throws -> Item?? {
        do {
            return .some(try live.find(Item.self, key: key))
        } catch let error as StoreError where error.code == .asyncReadRequired {
            return nil
        }
    }

    var live: ModelStore {
        get throws {
            guard let store else { throw Divergence(message: "no store is open") }
            return store
        }
    }

    /// Whether each operation is printed as it runs (`TRACKEDMODELS_REFERENCE_TRACE=1`): the
    /// way to see the program that crashed the process, which then prints no seed.
    static let tracing = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_TRACE"] == "1"
        || ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_REPLAY"] != nil

    func note(_ line: String) {
        transcript.append(line)
        if Self.tracing { print("  \(transcript.count). \(line)") }
    }

    // MARK: - Whose row

    func row(of object: Item) -> Reference.RowID? {
        if let (key, _) = objects.first(where: { $0.value === object }) { return .key(key) }
        if let (number, _) = newObjects.first(where: { $0.value === object }) { return .new(number) }
        return nil
    }

    /// Whether the store must record a write to the object: it is the current object of a row
    /// that shows values.
    func isManaged(_ object: Item) -> Bool {
        guard let row = row(of: object) else { return false }
        return reference.shown(row) != nil
    }

    /// Moves the objects of rows that no longer show values to the detached ones.
    func syncAttachment() {
        for (key, object) in objects where reference.shown(.key(key)) == nil {
            objects[key] = nil
            detached.append(object)
        }
        for (number, object) in newObjects where reference.shown(.new(number)) == nil {
            newObjects[number] = nil
            detached.append(object)
        }
    }

    /// Every object the program holds, in a fixed order: keyed, then new, then detached.
    var heldObjects: [Item] {
        objects.sorted { $0.key < $1.key }.map(\.value) + newObjects.sorted { $0.key < $1.key }.map(\.value) + detached
    }

    /// Whether an object the store manages for `key` is kept alive by a held object's `link`
    /// (followed from link to link) though the program holds it no longer: a detached object's
    /// assignment is its own, and a transaction that throws does not take it back.
    func isHeldThroughLinks(_ key: Int64) -> Bool {
        var seen: Set<ObjectIdentifier> = []
        var reachable = heldObjects
        while let object = reachable.popLast() {
            let link = Item.Column.link.rawValue
            guard seen.insert(ObjectIdentifier(object)).inserted, let target = object._$relatedObject(column: link) as? Item else { continue }
            // A stored object's cached target must be the one its key names: anything else is the
            // store's defect, not a reason to expect a refusal.
            if object._$tracking.isAttached, object._$tracking.foreignKeys[link] != target._$tracking.key { continue }
            if target.id == key, target._$tracking.isAttached { return true }
            reachable.append(target)
        }
        return false
    }

    /// One of the held objects, picked by `seed`: half the time one that a row the program
    /// shows links to (when there is one), so that changes read through `link` happen.
    func pickHeld(_ seed: UInt64) -> Item? {
        let held = leavesNewObjectsAlone ? heldObjects.filter { object in !newObjects.values.contains { $0 === object } } : heldObjects
        guard !held.isEmpty else { return nil }
        if seed % 2 == 0 {
            let linked = Set(reference.shownRows.values.compactMap { row -> Int64? in
                if case .integer(let key) = row[Item.Column.link.rawValue] { key } else { nil }
            })
            let targets = held.filter { $0.id.map(linked.contains) == true && isManaged($0) }
            if !targets.isEmpty { return targets[Int(seed / 2 % UInt64(targets.count))] }
        }
        return held[Int(seed / 2 % UInt64(held.count))]
    }

    /// Keeps an object the store handed out, as the current object of its row.
    func hold(_ object: Item) {
        // A new object the store hands out under its key before the program's flush returns
        // (its insert committed, the key read back) is still the new row for the reference.
        guard let key = object.id, objects[key] == nil, !detached.contains(where: { $0 === object }),
              !newObjects.values.contains(where: { $0 === object })
        else { return }
        objects[key] = object
    }
}

/// A failure to inject into a store's next commit or read (or the next few); set by the test,
/// taken by the store (its database worker, for a commit).
final class FaultSlot: Sendable {
    private let armed = Mutex<(error: StoreError?, times: Int)>((nil, 0))

    /// Fails the next `times` operations that take the slot with `error` (nil: none).
    func arm(_ error: StoreError?, times: Int = 1) {
        armed.withLock { $0 = (error, error == nil ? 0 : times) }
    }

    /// The error to fail this operation with, if the slot is armed; each take uses one of the
    /// times it was armed for.
    func take() -> StoreError? {
        armed.withLock { armed in
            guard armed.times > 0, let error = armed.error else { return nil }
            armed.times -= 1
            if armed.times == 0 { armed.error = nil }
            return error
        }
    }

    /// Disarms the slot, returning how many of the times it was armed for were not taken.
    func disarm() -> Int {
        armed.withLock { armed in
            defer { armed = (nil, 0) }
            return armed.times
        }
    }
}

/// A write the program makes while an awaited operation of its waits for the database, as
/// another task of an app would: once armed, at the `read`-th read the store awaits.
@MainActor
final class InterleavedWrite {
    private var readsToGo = 0
    private var write: (() throws -> Void)?
    private var failure: (any Error)?

    func arm(atRead read: Int, _ write: @escaping () throws -> Void) {
        readsToGo = read
        self.write = write
        failure = nil
    }

    /// The store is about to await the database for a read (its hook).
    func readAwaits() {
        guard let write else { return }
        readsToGo -= 1
        guard readsToGo == 0 else { return }
        self.write = nil
        do { try write() } catch { failure = error }
    }

    /// Disarms the slot; returns whether the write was made, and throws what it threw.
    func disarm() throws -> Bool {
        defer { (write, failure) = (nil, nil) }
        if let failure { throw failure }
        return write == nil
    }
}

/// Holds the worker's thread at a commit, once armed, until released: right after it (the
/// database holds the batch and the store has yet to hear so: its reads meanwhile must not
/// count the batch twice), or just before it (the store knows a commit is under way: its
/// reads wait for it to end).
final class CommitHold: Sendable {
    /// Where the worker's thread is held.
    enum Point: Sendable {
        /// Inside the transaction, after its writes, just before it commits.
        case beforeItsCommit
        /// Once the transaction committed, before the store hears so.
        case afterItsCommit
    }

    private let state = Mutex<(armed: Point?, holding: Bool)>((nil, false))
    private let reached = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// Holds the next commit at `point`.
    func arm(_ point: Point) {
        state.withLock { $0.armed = point }
    }

    /// On the worker's thread, at `point` of each commit.
    func holdIfArmed(at point: Point) {
        let holds = state.withLock { state in
            guard state.armed == point else { return false }
            state.armed = nil
            state.holding = true
            return true
        }
        guard holds else { return }
        reached.signal()
        released.wait()
    }

    /// Waits until a commit is held; false (disarmed) when none came in `timeout` (the
    /// commit failed, say).
    func waitUntilHeld(timeout: Duration) -> Bool {
        if reached.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds * 1_000))) == .success { return true }
        state.withLock { $0.armed = nil }
        // A commit may have taken it meanwhile.
        return reached.wait(timeout: .now()) == .success
    }

    /// Lets a held commit go on (nothing when none is held).
    func release() {
        let held = state.withLock { state in
            defer { state.holding = false }
            return state.holding
        }
        if held { released.signal() }
    }

    /// Lets a held commit go on after `delay`, from another thread: the program may be waiting
    /// for it meanwhile.
    func release(after delay: Duration) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatchInterval) { [self] in
            release()
        }
    }
}
