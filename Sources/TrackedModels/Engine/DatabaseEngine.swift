import Dispatch
import Logging

/// The database under a store, opened: the one place where an engine (SQLite or PostgreSQL)
/// differs from another.
///
/// Opening sets the database up for the models (creates missing tables when asked, checks
/// every table against its model, installs the change log) and yields two halves, one per
/// isolation domain: the ``reader`` answers reads on the store's actor, and the ``writer``
/// commits, reads rows back and reads the change log on the worker's queue. The registrar,
/// write-behind, feeds and live results never see either: they exchange compiled queries,
/// ``WriteUnit``s, ``CommitReport``s and ``ExternalChangeBatch``es, and errors cross as
/// ``StoreError``s with the engine's own error attached.
///
/// ```swift
/// let name = DatabaseEngine.name(of: .file("app.sqlite"))
/// let database = try await DatabaseEngine.open(.file("app.sqlite"), named: name, schemas: schemas, configuration: configuration, logger: logger)
/// let rows = try database.reader.answerNow([.query(query, limit: 10)])
/// ```
struct DatabaseEngine {
    let reader: any EngineReader
    let writer: any EngineWriter
    /// What the database does to the rows that point at a deleted row, where its schema
    /// declares it for a to-one relationship's column (`REFERENCES lists (id) ON DELETE
    /// CASCADE`): the store applies the same rule to its objects when it deletes.
    let deleteActions: [DeleteAction]
    /// How often at most the worker checks for other connections' commits (a check on a server
    /// is a round trip; a missed doorbell is what the poll catches there).
    var shortestPollInterval: Duration = .zero

    /// The name a location's database goes by in messages and logs: an absolute path for a
    /// file, a new private name for an in-memory database, `user@host:port/database` (no
    /// password) for PostgreSQL.
    static func name(of location: DatabaseLocation) -> String {
        switch location {
        case .file, .inMemory: SQLiteEngine.filename(of: location)
        case .postgres(let url): (try? PostgresEndpoint(url: url))?.description ?? PostgresEndpoint.redacted(url)
        }
    }

    /// Opens and sets up a local database (SQLite) for the models, on the caller's thread.
    ///
    /// - Parameter name: The location's ``name(of:)``.
    /// - Throws: ``StoreError``: ``StoreError/Code/schemaMismatch`` listing every difference
    ///   (nothing in the database is changed then), or what kept the database from opening;
    ///   ``StoreError/Code/asyncReadRequired`` for a database across a network.
    static func open(
        _ location: DatabaseLocation, named name: String, schemas: [TableSchema], configuration: ModelStore.Configuration, logger: Logger
    ) throws -> DatabaseEngine {
        guard case .postgres = location else {
            return try SQLiteEngine.open(location, filename: name, schemas: schemas, configuration: configuration, logger: logger)
        }
        throw StoreError(
            code: .asyncReadRequired,
            message: "opening \(name) connects to PostgreSQL, which the store's actor does not wait for; open it with `try await ModelStore.open(...)`"
        )
    }

    /// Opens and sets up a database of either engine; a server's round trips are awaited.
    static func open(
        _ location: DatabaseLocation, named name: String, schemas: [TableSchema], configuration: ModelStore.Configuration, logger: Logger
    ) async throws -> DatabaseEngine {
        guard case .postgres(let url) = location else {
            return try SQLiteEngine.open(location, filename: name, schemas: schemas, configuration: configuration, logger: logger)
        }
        return try await PostgreSQLEngine.open(PostgresEndpoint(url: url), schemas: schemas, configuration: configuration, logger: logger)
    }
}

/// The reading half of an engine, used on the store's actor: it answers ``DatabaseRead``s
/// about what is committed (the read side, `StoreReads`, lays the store's own changes over
/// them). Whether a read can be answered at once or is a round trip to await is the engine's to
/// say, and the read side's alone to act on.
protocol EngineReader: AnyObject {
    /// Whether ``answerNow(_:)`` answers: false for an engine whose reads cross a network,
    /// which only ``answer(_:)`` reaches.
    var answersAtOnce: Bool { get }

    /// The answers to reads, in their order, on the caller's thread.
    ///
    /// - Throws: ``StoreError/Code/asyncReadRequired`` where ``answersAtOnce`` is false; what
    ///   kept the database from answering.
    func answerNow(_ reads: [DatabaseRead]) throws -> [[[SQLValue]]]

    /// The answers to reads, in their order, awaiting the database where it is across a
    /// network (the caller's actor is free meanwhile).
    func answer(_ reads: [DatabaseRead]) async throws -> [[[SQLValue]]]

    /// How the engine's own SQL names the `index`-th bound value (from 1): `?1` in SQLite, `$1`
    /// in PostgreSQL.
    func parameter(_ index: Int) -> String
}

/// A table as one store sees it, for ``DatabaseRead/native(table:sql:arguments:overlay:)``: the
/// committed rows without `hiddenKeys` (or without any, when `hidesEveryRow`), and `rows`.
struct TableOverlay: Hashable {
    var hiddenKeys: [SQLValue] = []
    var hidesEveryRow = false
    var rows: [[SQLValue]] = []

    var isEmpty: Bool { hiddenKeys.isEmpty && !hidesEveryRow && rows.isEmpty }
}

/// The writing half of an engine, as the ``DatabaseWorker`` uses it. Every call comes from the
/// worker's queue, one at a time.
protocol EngineWriter: AnyObject {
    /// Commits units in one transaction, or nothing.
    ///
    /// Inside the transaction, before writing, the engine reads what other connections
    /// committed (so that everything the change log holds after that is this commit's own), and
    /// after writing it notes where the log and the database's version stand, so that a commit
    /// by someone else right after this one is never missed.
    ///
    /// - Parameters:
    ///   - rows: Rows to insert after the units, in the same transaction, taken chunk by chunk
    ///     as the store sends them (a bulk insert); their keys are the caller's, or assigned by
    ///     the database where a key is NULL and the table assigns keys.
    ///   - earlierKeys: Keys earlier commits assigned, by insert request, for the placeholders
    ///     (``KeyPlaceholder``) the units may still hold; keys this commit assigns are put in
    ///     place of theirs as it goes, and a placeholder with no key at all is written as NULL.
    ///   - willCommit: Called inside the transaction, just before it commits, with what it will
    ///     report; a ``StoreError`` it throws fails the transaction.
    /// - Throws: ``EngineFailure``: which unit and operation failed, or that the transaction as
    ///   a whole did (a streamed row it refused, too). Nothing is committed then. Cancelled
    ///   rows throw `CancellationError`, and rows the sender refused its ``StoreError`` (see
    ///   ``BulkRows/refuse(_:)``).
    func commit(_ units: [WriteUnit], rows: BulkRows?, earlierKeys: [UInt64: SQLValue], willCommit: (CommitReport) throws -> Void) throws -> EngineCommit

    /// The current rows of a table by primary key, in model column order; `nil` for a key with
    /// no row.
    func readRows(table: Int, keys: [SQLValue]) throws -> [[SQLValue]?]

    /// What other connections committed since the last look, row by row; `nil` when nobody
    /// did.
    ///
    /// - Parameter answeringSignal: Whether the look answers ``watchForCommits(on:wake:)``'s
    ///   signal. Such a look may check less than the others (PostgreSQL compares a smaller
    ///   digest of the log's catalog, the whole one at the others: the worker's timer, a look
    ///   the program asks for, a retry after a failed look).
    func readChangeLog(answeringSignal: Bool) throws -> ExternalChangeBatch?

    /// Keeps the change log, when due: records where this store's reading stands (PostgreSQL)
    /// and prunes what every reader has read. The worker calls it after reporting what a look
    /// found or a batch did, so that the report never waits for it; a failure is left to the
    /// next call.
    func tidyChangeLog()

    /// Calls `wake` on `queue` when another connection may have committed, sooner than the
    /// worker's polling would notice (SQLite: a write to the WAL file; PostgreSQL: the change
    /// log's notification). Does nothing for an engine with no such signal; stops at ``close()``.
    func watchForCommits(on queue: DispatchQueue, wake: @escaping @Sendable () -> Void)

    /// Whether every commit ``watchForCommits(on:wake:)`` signals can be read by the look the
    /// signal brings: true for PostgreSQL, which notifies listeners only once the transaction
    /// is visible to new snapshots; false for SQLite, whose WAL is written before the commit is
    /// published. Where false, a look after a signal that finds nothing is made again shortly.
    var signalsReadableCommits: Bool { get }

    /// Releases the connection. No call follows.
    func close()
}

/// A foreign key's `ON DELETE` action, as the database declares it for a to-one relationship's
/// column: `rule` is what happens to the child rows when a row of the target table is deleted.
struct DeleteAction: Equatable {
    var childTable: Int
    var column: Int
    var targetTable: Int
    var rule: DeleteRule
    /// The declaration's own words, for messages (`ON DELETE RESTRICT`).
    var declared: String
}

/// What a committed transaction produced, and what others had committed before it.
struct EngineCommit {
    var report: CommitReport
    var external: ExternalChangeBatch
}

/// Why ``EngineWriter/commit(_:willCommit:)`` committed nothing.
enum EngineFailure: Error {
    /// An operation failed: `unit` and `operation` are positions in the units given.
    case operation(unit: Int, operation: Int, StoreError)
    /// Beginning, reading the log, or committing failed.
    case transaction(StoreError)

    var error: StoreError {
        switch self {
        case .operation(_, _, let error), .transaction(let error): error
        }
    }
}
