/// One side of a ``DatabaseCopy``: a database of either engine, on one connection of its own.
///
/// Rows cross as ``SQLValue``s in model column order, a batch at a time, and every call comes
/// from the copying task, one at a time.
protocol CopyEndpoint: AnyObject {
    /// What tells this database from any other, so that a copy onto itself is refused: the
    /// file's device and inode, or the server's start time, port, database and schema.
    func identity() async throws -> String

    /// The migrations recorded as applied, in version order.
    func appliedMigrations() async throws -> [AppliedMigration]

    /// How a table differs from its model; empty when it fits.
    func differences(of schema: TableSchema) async throws -> [SchemaDifference]

    func rowCount(of schema: TableSchema) async throws -> Int

    /// Hands over every row of a table, in model column order, a batch of at most
    /// ``copyBatchSize`` rows at a time, in no particular order.
    ///
    /// - Throws: ``CopyError/Code/valueNotCopyable`` for text that is not UTF-8.
    func forEachBatch(of schema: TableSchema, _ body: ([[SQLValue]]) async throws -> Void) async throws
}

/// How many rows a copy reads (and an engine writes) at a time.
let copyBatchSize = 1_000

/// The side a copy reads.
protocol CopySource: CopyEndpoint {
    /// Runs `body` in a read transaction: every read sees the database as it was at its first.
    ///
    /// - Throws: what `body` throws; ``StoreError/Code/busy`` when a file read without locks
    ///   was written meanwhile.
    func inSnapshot<Result>(_ body: () async throws -> Result) async throws -> Result

    /// Checks, inside the snapshot, that what was read can be trusted: a file read without
    /// locks (this user may not write it) that someone wrote meanwhile cannot.
    ///
    /// - Throws: ``StoreError/Code/busy``.
    func checkConsistent() throws

    func close()
}

/// The side a copy writes.
protocol CopyTarget: CopyEndpoint {
    /// Migrations' bookkeeping on the same connection, whose
    /// ``MigrationStorage/inMigrationTransaction(_:)`` is the copy's one transaction when it
    /// migrates.
    var migrationStorage: any MigrationStorage { get }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it
    /// throws.
    func inTransaction<Result>(_ body: () async throws -> Result) async throws -> Result

    /// Creates a model's table (and its relationships' indexes) where it is missing.
    func createTableIfMissing(_ schema: TableSchema) async throws

    /// Sets columns to NULL in every row that holds something else in them.
    func clear(_ columns: [Int], of schema: TableSchema) async throws

    /// Deletes every row of a table, as a `DELETE` (so that watchers hear of it).
    func deleteRows(of schema: TableSchema) async throws

    /// Inserts rows in model column order, keys included.
    func insert(_ rows: [[SQLValue]], into schema: TableSchema) async throws

    /// Sets columns of rows inserted before: each of `rows` is a key, then the columns' values.
    func set(_ columns: [Int], of rows: [[SQLValue]], in schema: TableSchema) async throws

    /// Moves the table's key sequence, if it has one, past the largest key it holds. (On
    /// PostgreSQL a rollback does not move it back.)
    func advanceKeySequence(of schema: TableSchema) async throws

    /// Lets the database go; without `keeping`, a database file this endpoint created is
    /// removed.
    func close(keeping: Bool)
}
