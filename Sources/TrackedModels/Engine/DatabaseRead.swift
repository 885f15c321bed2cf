/// One read of what is committed, as the read side asks an engine for it
/// (``EngineReader/answer(_:)``). Every answer is a list of rows.
///
/// ```swift
/// let answers = try engine.answerNow([.rows(table: 0, keys: [1, 2]), .count(query)])
/// ```
enum DatabaseRead: Hashable {
    /// The rows a query matches, in its order, each a row of the query; at most `limit`.
    case query(CompiledQuery, limit: Int?)
    /// How many rows a query's predicate matches, its window left out: one row of one integer.
    case count(CompiledQuery)
    /// The rows of a table with these primary keys, in model column order, in no particular
    /// order; a key with no row has none.
    case rows(table: Int, keys: [SQLValue])
    /// A statement in the engine's own SQL dialect (the raw-SQL fetch and count speak it) over
    /// one table as a store sees it: the overlay's rows replace the committed rows of their
    /// keys.
    case native(table: Int, sql: String, arguments: [SQLValue], overlay: TableOverlay)
}
