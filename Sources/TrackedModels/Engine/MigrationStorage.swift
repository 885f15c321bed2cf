/// Where an engine keeps migrations' bookkeeping, and how it runs them: what
/// ``SchemaMigrator`` needs from SQLite or PostgreSQL.
protocol MigrationStorage {
    /// The migrations recorded as applied, in version order; none when the bookkeeping table
    /// does not exist.
    func appliedMigrations() async throws -> [AppliedMigration]

    /// Runs `body` in one write transaction that holds off other migrators (they wait, then
    /// find the work done), with the bookkeeping table created first. A throw rolls back.
    func inMigrationTransaction<Result>(_ body: () async throws -> Result) async throws -> Result

    /// Runs a migration's statements in order.
    ///
    /// - Throws: ``FailedStatement``.
    func run(_ migration: Migration) async throws

    /// Records a migration as applied now.
    func record(_ migration: Migration) async throws

    /// Lets the database go.
    func close()
}

/// A statement of a migration that failed, and why.
struct FailedStatement: Error {
    var sql: String
    var error: StoreError
}
