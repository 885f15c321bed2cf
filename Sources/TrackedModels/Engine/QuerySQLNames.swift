/// The names both engines' SQL gives a compiled query's parts: the `FROM` clause with its joins,
/// and each position of the query's row. Standard SQL, quoted as both engines quote.
extension CompiledQuery {
    /// The table, and each join: a left join of the target's table (named `j0`, `j1`, ...) on
    /// its primary key, compared as the key's own declaration compares (as reading the
    /// relationship finds its target).
    var sqlSource: String {
        let table = quoteIdentifier(schema.name)
        return joins.indices.reduce(table) { source, index in
            let join = joins[index]
            let alias = "\"j\(index)\""
            let key = join.target.primaryKey
            return source + " LEFT JOIN \(quoteIdentifier(join.target.name)) AS \(alias) ON \(alias).\(quoteIdentifier(key.name)) = \(table).\(quoteIdentifier(schema.columns[join.column].name))"
        }
    }

    /// A position of the query's row as SQL names it: the column alone without joins, else
    /// qualified by its table or its join.
    func sqlName(_ position: Int) -> String {
        guard !joins.isEmpty else { return quoteIdentifier(schema.columns[position].name) }
        guard let (join, column) = joined(at: position) else {
            return "\(quoteIdentifier(schema.name)).\(quoteIdentifier(schema.columns[position].name))"
        }
        return "\"j\(join)\".\(quoteIdentifier(joins[join].target.columns[column].name))"
    }
}
