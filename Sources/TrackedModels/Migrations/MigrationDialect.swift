/// The engine a set of migrations is written for: its SQL is that engine's, and it runs only
/// on that engine's databases.
///
/// ```swift
/// let migrator = try SchemaMigrator(MigrationDirectory.migrations(in: "Schemas/postgres", dialect: .postgres), dialect: .postgres)
/// try await migrator.migrate(.postgres("postgres://app@localhost/app"))
/// ```
public enum MigrationDialect: String, Sendable, Hashable, CaseIterable {
    /// SQLite's SQL, for `.file` and `.inMemory` databases.
    case sqlite
    /// PostgreSQL's SQL, for `.postgres` databases.
    case postgres

    /// The dialect of the databases at a location.
    public init(of location: DatabaseLocation) {
        self = if case .postgres = location { .postgres } else { .sqlite }
    }

    /// The engine's name, as messages say it.
    var displayName: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgres: "PostgreSQL"
        }
    }
}
