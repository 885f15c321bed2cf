import Foundation
import Synchronization

/// A SQLite database seen as tracked objects: fetch, insert, delete, and change them through
/// their properties; changes are written behind and ``flush()`` makes them durable.
///
/// A store and its objects belong to the actor that opened it (the main actor, or one of
/// yours), as a SwiftData `ModelContext` does. Its writer and its other background work run on
/// their own threads and hand results back to that actor.
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
/// acknowledged yet, at most about one ``Configuration/flushInterval`` of them when the writer
/// commits on its own.
public final class ModelStore {
    public let location: DatabaseLocation
    public let configuration: Configuration
    /// The absolute file name of the database (a private name for in-memory stores).
    public let filename: String

    let registrar: ModelRegistrar
    let reader: Connection
    let writer: WriteBehindWriter
    private(set) var mailbox: StoreMailbox<StoreMessage>!
    var flushState = FlushState()
    var isClosed = false
    /// Callers of ``refreshExternalChanges()`` waiting for their poll, by poll.
    var pollWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var lastPoll: UInt64 = 0
    /// The continuations of ``changes(_:bufferingPolicy:)`` streams, by subscription.
    var feedStreams: [UInt64: AsyncStream<ChangeEvent>.Continuation] = [:]

    /// Opens a database for the given models and checks that each one matches its table.
    ///
    /// A file is created when missing and put in WAL mode. Opening fails with one
    /// ``StoreError`` (code ``StoreError/Code/schemaMismatch``) listing every missing table,
    /// missing column or incompatible type.
    ///
    /// - Parameters:
    ///   - location: A file path, or ``DatabaseLocation/inMemory``.
    ///   - models: Every model type the store manages.
    ///   - configuration: Write-behind and durability settings.
    ///   - isolation: The actor the store and its objects belong to; by default, the caller's.
    ///     Open stores from an actor-isolated context (`@MainActor` code, or an actor's method).
    /// - Throws: ``SQLiteError`` when the file cannot be opened; ``StoreError`` on a mismatch.
    public init(
        _ location: DatabaseLocation,
        models: [any TrackedModel.Type],
        configuration: Configuration = Configuration(),
        isolation: (any Actor)? = #isolation
    ) throws {
        guard let isolation else {
            preconditionFailure("open a ModelStore from an actor-isolated context (for example @MainActor code): the store and its objects belong to that actor")
        }
        self.location = location
        self.configuration = configuration
        switch location {
        case .file(let path): filename = Connection.absoluteFilename(path)
        case .inMemory: filename = Connection.inMemoryFilename()
        }
        let registrar = ModelRegistrar(models: models)
        let reader = try Connection(filename: filename, mode: .readWriteCreate, busyTimeout: configuration.busyTimeout)
        self.reader = reader
        if case .file = location {
            try reader.execute("PRAGMA journal_mode = WAL")
        }
        try reader.execute("PRAGMA foreign_keys = ON")
        if configuration.createsMissingTables {
            try reader.withTransaction(.immediate) {
                for schema in registrar.schemas { try reader.execute(schema.createTableSQL) }
            }
        }
        let differences = try registrar.schemas.flatMap { try $0.differences(from: reader) }
        guard differences.isEmpty else { throw StoreError.schemaMismatch(differences) }

        let writerConnection = try Connection(filename: filename, mode: .readWrite, busyTimeout: configuration.busyTimeout)
        try writerConnection.execute("PRAGMA synchronous = \(configuration.durability.synchronousPragma)")
        try writerConnection.execute("PRAGMA foreign_keys = ON")
        var changeLog: ChangeLogReader?
        if configuration.observesExternalChanges {
            let layouts = try ChangeLog.install(on: reader, schemas: registrar.schemas)
            changeLog = try ChangeLogReader(
                schemas: registrar.schemas, layouts: layouts,
                retention: configuration.changeLogRetention, connection: writerConnection
            )
        }
        let outcomes = OutcomeForwarder()
        writer = WriteBehindWriter(
            connection: writerConnection,
            tables: registrar.schemas,
            maxBusyRetries: configuration.maxBusyRetries,
            changeLog: changeLog,
            pollInterval: configuration.externalChangePollInterval,
            walFile: location == .inMemory || !configuration.wakesOnFileChanges ? nil : filename + "-wal",
            report: { outcomes.forward($0) }
        )
        self.registrar = registrar
        mailbox = StoreMailbox(target: self, actor: isolation)
        outcomes.mailbox = mailbox
        registrar.flushThreshold = configuration.pendingThreshold
        registrar.didQueueChange = { [unowned self] in pendingDidChange() }
    }

    deinit {
        if !isClosed {
            // Nobody can await these any more, but they were made: hand them to the writer,
            // which commits them before its connection closes.
            submitPending()
            writer.close {}
        }
        for continuation in feedStreams.values { continuation.finish() }
        mailbox.finish()
        registrar.detachAll()
    }

    /// Commits every pending change, closes the connections, and detaches every object.
    ///
    /// Objects keep their values and stay usable as plain observable objects; their writes are
    /// no longer stored. Calling `close()` again does nothing.
    ///
    /// - Throws: The error of a flush that failed; the store is then still open, with the
    ///   changes pending, so that nothing is lost.
    public func close() async throws {
        guard !isClosed else { return }
        try await flush()
        isClosed = true
        await withCheckedContinuation { continuation in
            writer.close { continuation.resume() }
        }
        registrar.detachAll()
        finishErrorStreams()
        for continuation in feedStreams.values { continuation.finish() }
        feedStreams.removeAll()
        for waiter in pollWaiters.values { waiter.resume() }
        pollWaiters.removeAll()
        mailbox.finish()
    }

    /// What the writer has done: commits, statements, failures, retries.
    public var writerStatistics: WriterStatistics {
        writer.statistics.withLock { $0 }
    }

    func checkOpen(_ operation: String) throws {
        if isClosed { throw StoreError.closed(operation: operation) }
    }
}

/// Messages delivered to a store on its actor.
enum StoreMessage: Sendable {
    case writer(WriterEvent)
    case flushIntervalElapsed
    /// An `AsyncStream` feed ended: drop its subscription.
    case streamTerminated(subscription: UInt64)
}

extension ModelStore: MailboxTarget {
    func receive(_ message: StoreMessage) {
        switch message {
        case .writer(.batchFinished(let outcome)): handle(outcome)
        case .writer(.externalChanges(let batch)): apply(batch)
        case .writer(.pollFinished(let id)): pollFinished(id)
        case .flushIntervalElapsed: intervalElapsed()
        case .streamTerminated(let subscription):
            feedStreams.removeValue(forKey: subscription)
            registrar.feeds.remove(id: subscription)
        }
    }
}

/// Lets the writer, created before the store's mailbox, report to it.
private final class OutcomeForwarder: @unchecked Sendable {
    // @unchecked Sendable: `mailbox` is set once in the store's initializer, before the writer
    // receives its first batch; the queue hand-off orders that write before every read.
    var mailbox: StoreMailbox<StoreMessage>?

    func forward(_ event: WriterEvent) {
        mailbox?.send(.writer(event))
    }
}
