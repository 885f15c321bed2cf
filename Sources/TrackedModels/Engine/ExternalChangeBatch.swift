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
    /// Tables whose log entries were pruned before they were read: reload and reset them.
    var resetTables: [Int] = []

    var isEmpty: Bool { rows.isEmpty && resetTables.isEmpty }
}
