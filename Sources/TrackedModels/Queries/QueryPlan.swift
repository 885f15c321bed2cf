import Foundation

/// A ``FetchDescriptor`` compiled for one table: SQL to query it, SQL to test one row's
/// values, and the order as columns.
struct QueryPlan {
    /// One sort term: a column, and whether it sorts ascending.
    struct SortTerm: Hashable {
        var column: Int
        var ascending: Bool
    }

    let table: Int
    let schema: TableSchema
    /// `WHERE` over the table's columns with its values, or nil for every row.
    let filter: (sql: String, arguments: [SQLValue])?
    /// `SELECT CASE WHEN <predicate> THEN 1 ELSE 0 END` with column `i` bound at `?(i + 1)`,
    /// and the predicate's values after the columns'.
    let rowTest: (sql: String, arguments: [SQLValue])?
    /// The order: the descriptors' columns, then the primary key.
    let sort: [SortTerm]
    /// Every column the predicate or the order reads: a change to any other column cannot
    /// change the result.
    let columnsRead: Set<Int>
    let limit: Int?
    let offset: Int

    init<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>, table: Int) throws {
        self.table = table
        schema = Model._$schema
        var columnsRead: Set<Int> = []
        if let predicate = descriptor.predicate {
            var columns = PredicateTranslation(schema: schema, root: predicate.variable.key, columns: .tableColumns) { Model._$columnIndex(of: $0) }
            filter = (try columns.translate(predicate.expression), columns.arguments)
            columnsRead = columns.columnsRead
            var parameters = PredicateTranslation(schema: schema, root: predicate.variable.key, columns: .parameters) { Model._$columnIndex(of: $0) }
            let test = try parameters.translate(predicate.expression)
            rowTest = ("SELECT CASE WHEN \(test) THEN 1 ELSE 0 END", parameters.arguments)
        } else {
            filter = nil
            rowTest = nil
        }
        var sort: [SortTerm] = []
        for descriptor in descriptor.sortBy {
            guard let keyPath = descriptor.keyPath, let column = Model._$columnIndex(of: keyPath) else {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "a sort descriptor of \(Model.self) does not name a stored column; sort by key paths to stored properties"
                )
            }
            if let comparator = descriptor.stringComparator, comparator != .lexical {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "sorting \(Model._$schema.name).\(schema.columns[column].name) with a localized or option-based string comparator has no exact SQL translation; use SortDescriptor(\\.\(schema.columns[column].property), comparator: .lexical) or the default"
                )
            }
            sort.append(SortTerm(column: column, ascending: descriptor.order == .forward))
            columnsRead.insert(column)
        }
        sort.append(SortTerm(column: schema.primaryKeyIndex, ascending: true))
        self.sort = sort
        self.columnsRead = columnsRead
        if let limit = descriptor.fetchLimit, limit < 0 {
            throw StoreError(code: .unsupportedPredicate, message: "fetchLimit is \(limit); use 0 or more, or nil for no limit")
        }
        if let offset = descriptor.fetchOffset, offset < 0 {
            throw StoreError(code: .unsupportedPredicate, message: "fetchOffset is \(offset); use 0 or more")
        }
        limit = descriptor.fetchLimit
        offset = descriptor.fetchOffset ?? 0
    }

    /// `ORDER BY` for the sort.
    var orderBySQL: String {
        sort.map { "\(schema.columns[$0.column].sqlExpression) \($0.ascending ? "ASC" : "DESC")" }.joined(separator: ", ")
    }

    /// The select of matching rows in order, at most `limit` of them (no offset).
    func selectSQL(limit: Int?) -> (sql: String, arguments: [SQLValue]) {
        var sql = schema.selectSQL
        var arguments: [SQLValue] = []
        if let filter {
            sql += " WHERE \(filter.sql)"
            arguments = filter.arguments
        }
        sql += " ORDER BY \(orderBySQL)"
        if let limit { sql += " LIMIT \(limit)" }
        return (sql, arguments)
    }

    /// How a row sorts.
    func entry(of row: [SQLValue]) -> SortedRows.Entry {
        SortedRows.Entry(
            head: row[sort[0].column],
            middle: sort.count > 2 ? sort[1..<(sort.count - 1)].map { row[$0.column] } : [],
            key: row[schema.primaryKeyIndex]
        )
    }

    /// Whether `a` comes before `b`, with SQLite's ordering of values.
    func precedes(_ a: SortedRows.Entry, _ b: SortedRows.Entry) -> Bool {
        var order = SQLValue.compare(a.head, b.head)
        if order != .orderedSame { return (order == .orderedAscending) == sort[0].ascending }
        for index in a.middle.indices {
            order = SQLValue.compare(a.middle[index], b.middle[index])
            if order != .orderedSame { return (order == .orderedAscending) == sort[index + 1].ascending }
        }
        return SQLValue.compare(a.key, b.key) == .orderedAscending
    }
}
