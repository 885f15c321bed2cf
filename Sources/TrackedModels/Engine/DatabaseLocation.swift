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
    /// A server whose host stops answering (gone, or cut off without a reset) fails what waits
    /// on it in about 25 s, and the server ends a session whose store vanished the same way,
    /// rolling back its transaction. libpq's `keepalives_idle`, `keepalives_interval` (seconds),
    /// `keepalives_count` and `tcp_user_timeout` (milliseconds) set that otherwise, for both ends:
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
