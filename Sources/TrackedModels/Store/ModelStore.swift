import Dispatch
import Foundation
import Logging
import Synchronization

/// A SQLite database seen as tracked objects: fetch, insert, delete, and change them through
/// their properties; changes are written behind and ``flush()`` makes them durable.
///
/// A store and its objects belong to the actor that opened it (the main actor, or one of
/// yours), as a SwiftData `ModelContext` does; every method checks that it runs there. Its
/// database work runs on a worker thread of its own and hands results back to that actor.
///
/// ```swift
/// @MainActor func bumpFirstRow() async throws {
///     let store = try ModelStore(.file("model.sqlite"), models: [Row.self])
///     let row = try store.fetch(Row.self, orderBy: "id", limit: 1)[0]
///     row.count += 1            // observers of row.count hear it now
///     try await store.flush()   // committed: a crash from here on loses nothing
///     try await store.close()
/// }
/// ```
///
/// What a crash can lose: exactly the changes that no `flush()` (or ``close()``) has
/// acknowledged yet, at most about one ``Configuration/flushInterval`` of them when the store
/// commits on its own.
///
/// The store is a façade: the registrar tracks objects and posts changes to feeds, write-behind
/// owns what is not committed yet, and the database worker commits and watches the file.
public final class ModelStore {
    public let location: DatabaseLocation
    public let configuration: Configuration
    /// The absolute file name of the database (a private name for in-memory stores), or
    /// `user@host:port/database` for PostgreSQL.
    public let filename: String

    let registrar: ModelRegistrar
    /// Events waiting for delivery; the registrar posts them, the store delivers them.
    let outbox: Outbox
    /// Every subscription: feeds, live results, the store's streams.
    var feeds: FeedIndex { outbox.feeds }
    let writeBehind: WriteBehind
    /// What the store shows, and every read of it.
    let reads: StoreReads
    /// The `ON DELETE` actions the database declares for to-one columns that no to-many
    /// relationship of a model names, by target table: deleting applies them as delete rules.
    let databaseDeleteRules: [[DeleteAction]]
    let worker: DatabaseWorker
    let mailbox: StoreMailbox<StoreMessage>
    /// The actor the store and its objects belong to.
    let isolation: any Actor
    /// The configuration's logger, with the file's path as metadata.
    let logger: Logger
    private let isMainActor: Bool
    private(set) var isClosed = false
    /// Callers of ``refreshExternalChanges()`` waiting for their poll, by poll.
    var pollWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var lastPoll: UInt64 = 0
    /// The continuations of ``changes(_:bufferingPolicy:)`` streams, by subscription.
    var feedStreams: [UInt64: AsyncStream<ChangeEvent>.Continuation] = [:]
    /// Rows a discard brought back whose return is announced once they are read (on
    /// PostgreSQL, or after a read that failed): until then, their subscribers know them gone
    /// (see `ModelStore+Flushing`).
    var restoresAwaitingRead: [RowReference: RestoreAwaitingRead] = [:]

    /// Opens a local database (SQLite) for the models and checks that each one matches its
    /// table.
    ///
    /// A file is created when missing and put in WAL mode. Opening fails with one
    /// ``StoreError`` (code ``StoreError/Code/schemaMismatch``) listing every missing table,
    /// missing column or incompatible type. A PostgreSQL database is opened with
    /// ``open(_:models:configuration:isolation:)``, which awaits the server.
    ///
    /// ```swift
    /// let store = try ModelStore(.file("app.sqlite"), models: [Row.self])
    /// ```
    ///
    /// - Parameters:
    ///   - location: A file path, or ``DatabaseLocation/inMemory``.
    ///   - models: Every model type the store manages.
    ///   - configuration: Write-behind and durability settings.
    ///   - isolation: The actor the store and its objects belong to; by default, the caller's.
    ///     Open stores from an actor-isolated context (`@MainActor` code, or an actor's method).
    /// - Throws: ``StoreError``: ``StoreError/Code/schemaMismatch`` listing every difference,
    ///   or what kept the database from opening (``StoreError/Code/cannotOpen`` ...);
    ///   ``StoreError/Code/asyncReadRequired`` for a PostgreSQL location.
    public convenience init(
        _ location: DatabaseLocation,
        models: [any TrackedModel.Type],
        configuration: Configuration = Configuration(),
        isolation: (any Actor)? = #isolation
    ) throws {
        let isolation = Self.requireIsolation(isolation)
        try Self.checkRelationships(of: models)
        let name = DatabaseEngine.name(of: location)
        let logger = Self.logger(of: configuration, name: name)
        let database = try DatabaseEngine.open(location, named: name, schemas: models.map { $0._$schema }, configuration: configuration, logger: logger)
        self.init(location: location, models: models, configuration: configuration, isolation: isolation, name: name, logger: logger, database: database)
    }

    /// Opens a database of either engine for the models and checks that each one matches its
    /// table; a PostgreSQL server's round trips are awaited, never waited for on the actor.
    ///
    /// ```swift
    /// let store = try await ModelStore.open(.postgres("postgres://app:secret@db.internal/app"), models: [Row.self])
    /// ```
    ///
    /// - Parameters:
    ///   - location: A PostgreSQL URL, a file path, or ``DatabaseLocation/inMemory``.
    ///   - models: Every model type the store manages.
    ///   - configuration: Write-behind and durability settings.
    ///   - isolation: The actor the store and its objects belong to; by default, the caller's.
    /// - Throws: ``StoreError``: ``StoreError/Code/schemaMismatch`` listing every difference,
    ///   or what kept the database from opening: ``StoreError/Code/cannotOpen`` for a wrong URL
    ///   or a missing database, ``StoreError/Code/accessDenied`` for bad credentials,
    ///   ``StoreError/Code/connectionLost`` for a server that cannot be reached, each naming the
    ///   host and database.
    public static func open(
        _ location: DatabaseLocation,
        models: [any TrackedModel.Type],
        configuration: Configuration = Configuration(),
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> ModelStore {
        let actor = requireIsolation(isolation)
        try checkRelationships(of: models)
        let name = DatabaseEngine.name(of: location)
        let logger = logger(of: configuration, name: name)
        let database = try await DatabaseEngine.open(location, named: name, schemas: models.map { $0._$schema }, configuration: configuration, logger: logger)
        return ModelStore(location: location, models: models, configuration: configuration, isolation: actor, name: name, logger: logger, database: database)
    }

    private static func requireIsolation(_ isolation: (any Actor)?) -> any Actor {
        guard let isolation else {
            preconditionFailure("open a ModelStore from an actor-isolated context (for example @MainActor code): the store and its objects belong to that actor")
        }
        return isolation
    }

    /// The configuration's logger, with the database's name as metadata.
    private static func logger(of configuration: Configuration, name: String) -> Logger {
        var logger = configuration.logger
        logger[metadataKey: "file"] = "\(name)"
        return logger
    }

    /// Wires the parts together around an opened database.
    private init(
        location: DatabaseLocation, models: [any TrackedModel.Type], configuration: Configuration, isolation: any Actor,
        name: String, logger: Logger, database: DatabaseEngine
    ) {
        self.location = location
        self.configuration = configuration
        self.isolation = isolation
        isMainActor = isolation === MainActor.shared
        let schemas = models.map { $0._$schema }
        filename = name
        self.logger = logger
        databaseDeleteRules = schemas.indices.map { target in
            database.deleteActions.filter { action in
                action.targetTable == target && !schemas[target].relationships.contains { relationship in
                    relationship.child == ObjectIdentifier(models[action.childTable]) && relationship.childColumn == action.column
                }
            }
        }
        let mailbox = StoreMailbox<StoreMessage>(actor: isolation)
        self.mailbox = mailbox
        worker = DatabaseWorker(
            engine: database.writer,
            linkColumns: schemas.map(\.relationshipColumns),
            watchesChanges: configuration.observesExternalChanges,
            pollInterval: max(configuration.externalChangePollInterval, database.shortestPollInterval),
            maxBusyRetries: configuration.maxBusyRetries,
            logger: logger,
            afterCommit: configuration.afterCommit,
            faultBeforeCommit: configuration.faultBeforeCommit,
            report: { mailbox.send(.worker($0)) }
        )
        writeBehind = WriteBehind(
            schemas: schemas,
            policy: WriteBehind.Policy(interval: configuration.flushInterval, threshold: configuration.pendingThreshold),
            worker: worker,
            logger: logger,
            scheduleTick: { delay in
                DispatchQueue.global().asyncAfter(deadline: .now() + delay.dispatchInterval) { mailbox.send(.flushIntervalElapsed) }
            }
        )
        outbox = Outbox(feeds: FeedIndex(schemas: schemas))
        registrar = ModelRegistrar(models: models, writeBehind: writeBehind, outbox: outbox)
        reads = StoreReads(
            engine: database.reader, shown: ShownState(registrar: registrar, writeBehind: writeBehind), isolation: isolation,
            faultBeforeRead: configuration.faultBeforeRead, beforeAwaitingRead: configuration.beforeAwaitingRead
        )
        registrar.relationships.loadObject = { [unowned self] table, key in loadRelatedObject(table: table, key: key) }
        registrar.relationships.loadChildren = { [unowned self] table, column, key in try loadChildren(table: table, column: column, key: key) }
        mailbox.start(delivering: self)
        worker.start()
    }

    deinit {
        // Reads started for later place nothing once the store is gone.
        reads.close()
        if !isClosed {
            // Nobody can await these any more, but they were made: hand them to the worker,
            // which commits them before its connection closes.
            writeBehind.submit(retryingRejected: true)
            worker.close()
        }
        writeBehind.errors.finish()
        for continuation in feedStreams.values { continuation.finish() }
        mailbox.finish()
        registrar.detachAll()
    }

    /// Commits every change, closes the connections, and detaches every object.
    ///
    /// Every change made before `close()` returns is committed, including changes made while
    /// it waits (by a change handler, or another task on the store's actor). Afterwards,
    /// objects keep their values and stay usable as plain observable objects, but their writes
    /// are no longer stored. Calling `close()` again does nothing.
    ///
    /// ```swift
    /// try await store.close()
    /// ```
    ///
    /// - Throws: The error of a flush that failed, or of a change the database refused; the
    ///   store is then still open, with the changes pending, so that nothing is lost.
    public func close() async throws {
        checkIsolation("close()")
        guard !isClosed else { return }
        while writeBehind.hasChanges {
            try await writeBehind.flush()
        }
        // Nothing can change between the last check and the return: no await from here on, so
        // no write lands between the last flush and the objects' detaching.
        isClosed = true
        reads.close()
        registrar.detachAll()
        writeBehind.errors.finish()
        for continuation in feedStreams.values { continuation.finish() }
        feedStreams.removeAll()
        for waiter in pollWaiters.values { waiter.resume() }
        pollWaiters.removeAll()
        mailbox.finish()
        // Nothing is left to commit: this only closes the connections.
        await worker.closed()
    }

    /// What the database worker has done: commits, statements, failures, retries.
    public var writerStatistics: WriterStatistics {
        worker.statistics.withLock { $0 }
    }

    /// Traps unless called on the store's actor, naming the operation and the actor.
    ///
    /// The main actor is checked through its dispatch queue, so that the message is printed: on
    /// Linux, `preconditionIsolated` traps without printing its message.
    func checkIsolation(_ operation: @autoclosure () -> String) {
        func message() -> String {
            "ModelStore.\(operation()) must be called on \(String(describing: type(of: isolation))), the actor that opened the store"
        }
        if isMainActor {
            precondition(MainQueue.isCurrent, message())
        } else {
            isolation.preconditionIsolated(message())
        }
    }

    /// Checks the isolation, then that the store is open.
    func checkOpen(_ operation: String) throws {
        checkIsolation(operation)
        if isClosed { throw StoreError.closed(operation: operation) }
    }
}

extension WorkerEvent {
    /// Whether the event brings committed data the store applies.
    var deliversData: Bool {
        switch self {
        case .batchFinished, .externalChanges, .rowsReloaded: true
        case .polled, .settled: false
        }
    }
}

/// Messages delivered to a store on its actor.
enum StoreMessage: Sendable {
    case worker(WorkerEvent)
    case flushIntervalElapsed
    /// An `AsyncStream` feed ended: drop its subscription.
    case streamTerminated(subscription: UInt64)
}

extension ModelStore: MailboxTarget {
    func receive(_ message: StoreMessage) {
        if case .worker(let event) = message, event.deliversData { reads.committedDataArrived() }
        switch message {
        case .worker(.batchFinished(let outcome)):
            let finished = writeBehind.finish(outcome)
            if !finished.assignedKeys.isEmpty { worker.forgetAssignedKeys(of: finished.assignedKeys.keys) }
            registrar.applyCommitted(finished)
        case .worker(.externalChanges(let batch)):
            if !batch.schemaDifferences.isEmpty {
                var error = StoreError.schemaMismatch(batch.schemaDifferences)
                error.message = "a tracked table was altered while the store is open: \(error.message)"
                writeBehind.errors.report(error)
            }
            if let failure = batch.logFailure {
                writeBehind.errors.reportFailedRead(
                    failure, "the change log was found gone or changed and could not be installed again: other connections' changes are not heard until it is, and every look tries again"
                )
            }
            registrar.applyExternal(batch)
            for table in batch.resetTables {
                logger.notice("another connection's changes to the table are known only as a whole (rows inserted in bulk, log entries pruned before this store read them, or its change log found taken away and installed again); reloading the table and announcing a reset", metadata: ["table": "\(registrar.schemas[table].name)"])
                // The rows it holds objects of, and those its changes not yet committed touch
                // (the ones another connection removed have no row left for them).
                let keys = registrar.identityMap.objects(table: table).map(\.key) + writeBehind.uncommittedRows(table: table).keys
                worker.reload(table: table, keys: Array(Set(keys)), announcingReset: true)
            }
        case .worker(.rowsReloaded(let table, let rows, let announcingReset)):
            registrar.applyReloaded(table: table, rows: rows, announcingReset: announcingReset, origin: announcingReset ? .external : .local)
        case .worker(.polled(let id)):
            // The batch the poll found was applied before this message; the reloads its resets
            // asked for are done when the worker settles.
            worker.settle(id)
        case .worker(.settled(let id)):
            pollWaiters.removeValue(forKey: id)?.resume()
        case .flushIntervalElapsed:
            if !isClosed { writeBehind.intervalElapsed() }
        case .streamTerminated(let subscription):
            feedStreams.removeValue(forKey: subscription)
            feeds.remove(id: subscription)
        }
    }
}
