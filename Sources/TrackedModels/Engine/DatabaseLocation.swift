/// Where a database lives, and so which engine serves it.
///
/// ```swift
/// let local = try ModelStore(.file("app.sqlite"), models: [Row.self])
/// let shared = try await ModelStore.open(.postgres("postgres://app:secret@db.internal/app"), models: [Row.self])
/// ```
public enum DatabaseLocation: Sendable, Hashable {
    /// A SQLite file. A relative path is resolved against the current directory when the store
    /// opens, and the path is always a plain file name: `file:x.sqlite` names a file called
    /// `file:x.sqlite`, never a URI with options.
    case file(String)
    /// A private in-memory SQLite database, shared by the store's connections and gone on close.
    case inMemory
    /// A PostgreSQL database, by URL: `postgres://user:password@host:port/database`, with
    /// `?sslmode=disable|prefer|require` (prefer by default) as libpq reads it. Open it with
    /// ``ModelStore/open(_:models:configuration:isolation:)``: connecting is a round trip.
    ///
    /// When the server's host stops answering (gone, or cut off without a reset), the store's
    /// writing connection notices in about 25 s: a flush then fails within a minute or so,
    /// unless its `COMMIT` was on the way (then the store waits until the server can say
    /// whether it committed, so that nothing is written twice). The server ends the writer's
    /// session the same way when the store vanishes, rolling back its open transaction and
    /// releasing its locks. libpq's `keepalives_idle`, `keepalives_interval` (seconds),
    /// `keepalives_count` and `tcp_user_timeout` (milliseconds; Linux only) set that otherwise,
    /// for both ends:
    ///
    /// ```swift
    /// // Notice a silent server in about 5 s: idle 2 s, then 3 probes 1 s apart.
    /// .postgres("postgres://app@db.internal/app?keepalives_idle=2&keepalives_interval=1&keepalives_count=3&tcp_user_timeout=5000")
    /// ```
    case postgres(String)
}

extension DatabaseLocation: CustomStringConvertible {
    /// How messages name the database: the file's path, `:memory:`, or the URL without its
    /// password.
    public var description: String {
        switch self {
        case .file(let path): path
        case .inMemory: ":memory:"
        case .postgres(let url): PostgresEndpoint.redacted(url)
        }
    }
}
