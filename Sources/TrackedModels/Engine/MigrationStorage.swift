/// The engine's side of migrations: where their bookkeeping is kept, and how a migration's SQL
/// runs. ``SchemaMigrator`` decides what to apply; an engine only stores and runs.
protocol MigrationStorage {
    /// The migrations recorded as applied, in version order; none when the bookkeeping table
    /// does not exist.
    func appliedMigrations() throws -> [AppliedMigration]

    /// Runs `body` in one write transaction that holds off other migrators (they wait, then
    /// find the work done), with the bookkeeping table created first. A throw rolls back.
    func inMigrationTransaction<Result>(_ body: () throws -> Result) throws -> Result

    /// Runs a migration's statements in order.
    ///
    /// - Throws: ``FailedStatement``.
    func run(_ migration: Migration) throws

    /// Records a migration as applied now.
    func record(_ migration: Migration) throws
}

/// A statement of a migration that failed, and why.
struct FailedStatement: Error {
    var sql: String
    var error: StoreError
}
