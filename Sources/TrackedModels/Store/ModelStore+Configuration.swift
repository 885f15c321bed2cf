public import Logging

extension ModelStore {
    /// How a store writes behind and how durable a flush is. Every field has a default.
    ///
    /// ```swift
    /// var configuration = ModelStore.Configuration()
    /// configuration.flushInterval = .milliseconds(20)
    /// configuration.durability = .full
    /// let store = try ModelStore(.file("app.sqlite"), models: [Row.self], configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// How long a change may wait before the store commits it on its own: 100 ms.
        ///
        /// The interval starts with the first change after a flush, so a burst of changes is
        /// committed as one transaction at most this long after it began.
        public var flushInterval: Duration = .milliseconds(100)

        /// How many pending operations (one per changed row, insert or delete) start a flush
        /// without waiting for the interval: 1,000.
        public var pendingThreshold = 1_000

        /// What a flush survives. ``Durability/processCrash`` by default.
        public var durability = Durability.processCrash

        /// How long a statement waits for another connection's lock before `SQLITE_BUSY`: 5 s.
        public var busyTimeout: Duration = .seconds(5)

        /// How often the database worker retries a whole flush that failed with `SQLITE_BUSY` or
        /// `SQLITE_LOCKED` after the busy timeout, with doubling pauses from 50 ms: 3.
        public var maxBusyRetries = 3

        /// Whether opening creates the tables of models that have none (`CREATE TABLE IF NOT
        /// EXISTS` from each ``TableSchema``): `false`. Databases with migrations leave it off,
        /// so that a missing table is reported instead of silently created.
        public var createsMissingTables = false

        /// Whether the store hears changes other connections commit to its tables (another
        /// process, another store, the `sqlite3` shell): `true`.
        ///
        /// The store installs change-log triggers on its tables and polls for commits. The
        /// triggers add a log row to every written row, whoever writes; turn this off for a
        /// store that never shares its file (a store that turns it off installs no triggers,
        /// but triggers another store installed still fire).
        public var observesExternalChanges = true

        /// How often the store checks for other connections' commits: 25 ms. A check that
        /// finds nothing costs one `PRAGMA data_version`. On PostgreSQL, where a check is a round
        /// trip to the server and the change log's doorbell rings at each commit, the store
        /// checks at most every 250 ms, to catch what a doorbell missed.
        public var externalChangePollInterval: Duration = .milliseconds(25)

        /// Whether the store also checks as soon as another connection signals a commit, instead
        /// of waiting for the next poll: `true`. On SQLite, when another process writes the
        /// database's WAL file (Linux only, inotify), which brings commit-to-event latency from
        /// about half the poll interval to well under a millisecond; on PostgreSQL, when the
        /// change log's doorbell (a `NOTIFY`) rings. Turn it off to rely on polling alone.
        public var wakesOnFileChanges = true

        /// How many change-log entries stay for slower readers: 10,000. The log is pruned back
        /// to this when it doubles; a store that falls further behind reloads its objects and
        /// sends a ``ChangeEvent/Kind/reset``.
        public var changeLogRetention = 10_000

        /// How long a store may be away (closed, disconnected, stopped) before PostgreSQL's
        /// change log is pruned past what it has read: 10 minutes. A store that comes back later
        /// reloads its objects and sends a ``ChangeEvent/Kind/reset``. (SQLite's log keeps
        /// ``changeLogRetention`` entries instead.)
        public var changeLogReaderTimeout: Duration = .seconds(600)

        /// Where the store logs what it does on its own: busy retries (debug), commits that
        /// failed and changes the database refused (warning), resets after falling behind other
        /// processes (notice) and change-log pruning (debug), each with the file's path and,
        /// where there is one, the table and row. By default nothing is logged; the store never
        /// bootstraps logging itself.
        ///
        /// ```swift
        /// configuration.logger = Logger(label: "app.store")
        /// ```
        public var logger = Logger(label: "TrackedModels", factory: { _ in SwiftLogNoOpLogHandler() })

        /// Test hook: runs on the database worker's thread right after each commit of this
        /// store, before the worker does anything else.
        var afterCommit: (@Sendable () -> Void)?

        /// Test hook: runs inside each commit's transaction, after its writes and just before
        /// it commits; an error it returns fails the commit there (everything rolls back), as a
        /// full disk, an I/O error or a busy database at that moment would.
        var faultBeforeCommit: (@Sendable () -> StoreError?)?

        /// Test hook: runs before each read the store asks of the database; an error it
        /// returns fails that read there, as an I/O error or a damaged page would.
        var faultBeforeRead: (@Sendable () -> StoreError?)?

        /// Test hook: runs on the store's isolation each time a read is about to await the
        /// database, where the program's other tasks may run (and change the store) meanwhile.
        var beforeAwaitingRead: (@Sendable () -> Void)?

        public init() {}
    }

    /// What a committed flush survives.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_synchronous>
    public enum Durability: Sendable, Hashable {
        /// Survives the process crashing or being killed (WAL with `synchronous=NORMAL`). A power
        /// loss or OS crash may roll back the most recent commits, never corrupt the file.
        case processCrash
        /// Also survives power loss and OS crashes (`synchronous=FULL`): each commit waits for
        /// the disk.
        case full
    }
}
