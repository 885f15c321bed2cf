/// What other connections committed since the worker last looked, row by row.
struct ExternalChangeBatch: Sendable {
    struct Row: Sendable {
        enum Kind: Sendable {
            case update, insert, delete
        }

        var table: Int
        var key: SQLValue
        var kind: Kind
        /// Model columns that changed (all of them for inserts and deletes).
        var columns: [Int]
        /// The row as committed now, in model column order; `nil` once deleted.
        var values: [SQLValue]?
    }

    var rows: [Row] = []
    /// Tables to reload and reset: another connection inserted rows into them in bulk, or
    /// their log entries were pruned before they were read.
    var resetTables: [Int] = []
    /// How the tracked tables now differ from the models, found when the schema changed under
    /// the store (a column renamed, dropped or given another type): published on `writeErrors`.
    var schemaDifferences: [SchemaDifference] = []

    /// Why the change log, found gone or changed, could not be installed again: other
    /// connections' changes are not heard until it is. Published on `writeErrors`.
    var logFailure: StoreError?

    var isEmpty: Bool { rows.isEmpty && resetTables.isEmpty && schemaDifferences.isEmpty && logFailure == nil }

    /// Adds what a later look at the same moment found (a repair of the log after the look
    /// that found it broken).
    mutating func add(_ other: ExternalChangeBatch) {
        rows += other.rows
        resetTables += other.resetTables.filter { !resetTables.contains($0) }
        schemaDifferences += other.schemaDifferences
        logFailure = logFailure ?? other.logFailure
    }
}
