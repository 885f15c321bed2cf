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
