/// A compiled query as SQLite's SQL: values bound as numbered parameters, text compared by its
/// bytes (`COLLATE BINARY`, whatever the table declares), and a `localizedStandard` order
/// through a collation the engine registers on its connections, which calls the same
/// comparison the in-memory evaluator does.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_expr.html>,
/// <https://www.sqlite.org/datatype3.html#collation>
struct SQLiteDialect {
    #if canImport(Darwin)
    /// The collation behind ``TextOrder/localizedStandard``.
    static let localizedStandardCollation = "tracked_localized_standard"
    #endif

    /// The select of a query's matching rows in order, at most `limit` of them (no offset).
    static func select(_ query: CompiledQuery, limit: Int?) -> (sql: String, arguments: [SQLValue]) {
        var writer = SQLiteDialect(query)
        var sql = query.joins.isEmpty
            ? query.schema.selectSQL
            : "SELECT \((0..<query.width).map(writer.name).joined(separator: ", ")) FROM \(writer.source)"
        if let predicate = query.predicate { sql += " WHERE \(writer.write(predicate))" }
        sql += " ORDER BY " + query.sort.map(writer.write).joined(separator: ", ")
        if let limit { sql += " LIMIT \(limit)" }
        return (sql, writer.arguments)
    }

    /// The count of a query's matching rows (no window).
    static func count(_ query: CompiledQuery) -> (sql: String, arguments: [SQLValue]) {
        var writer = SQLiteDialect(query)
        var sql = "SELECT count(*) FROM \(writer.source)"
        if let predicate = query.predicate { sql += " WHERE \(writer.write(predicate))" }
        return (sql, writer.arguments)
    }

    /// A query's predicate as SQL, with the `FROM` clause it reads (the table and its joins), for
    /// tests that compare its value with the evaluator's row by row.
    static func condition(_ query: CompiledQuery) -> (sql: String, from: String, arguments: [SQLValue]) {
        var writer = SQLiteDialect(query)
        let sql = query.predicate.map { writer.write($0) } ?? "1"
        return (sql, writer.source, writer.arguments)
    }

    private let query: CompiledQuery
    /// The values bound, in parameter-number order.
    private(set) var arguments: [SQLValue] = []

    private init(_ query: CompiledQuery) {
        self.query = query
    }

    private var source: String { query.sqlSource }

    private func name(_ position: Int) -> String { query.sqlName(position) }

    /// A column in expressions and orders: text with `COLLATE BINARY`, so that a collation the
    /// table declares (NOCASE, RTRIM) does not change what matches or how rows sort, and the
    /// evaluator's order and the database's agree.
    private func column(_ position: Int) -> String {
        query.column(at: position).type == .text ? "\(name(position)) COLLATE BINARY" : name(position)
    }

    private func write(_ term: CompiledQuery.SortTerm) -> String {
        #if canImport(Darwin)
        let expression = switch term.textOrder {
        case .binary: column(term.column)
        case .localizedStandard: "\(name(term.column)) COLLATE \(Self.localizedStandardCollation)"
        }
        #else
        let expression = column(term.column)
        #endif
        return "\(expression) \(term.ascending ? "ASC" : "DESC")"
    }

    private mutating func write(_ expression: QueryExpression) -> String {
        switch expression {
        case .column(let index):
            return column(index)
        case .value(.null):
            return "NULL"
        case .value(let value):
            arguments.append(value)
            return "?\(arguments.count)"
        case .compare(let comparison, let lhs, let rhs):
            let op = switch comparison {
            case .equal: "IS"
            case .notEqual: "IS NOT"
            case .less: "<"
            case .lessOrEqual: "<="
            case .greater: ">"
            case .greaterOrEqual: ">="
            }
            return binary(lhs, op, rhs)
        case .and(let lhs, let rhs): return binary(lhs, "AND", rhs)
        case .or(let lhs, let rhs): return binary(lhs, "OR", rhs)
        case .not(let operand): return "(NOT \(write(operand)))"
        case .arithmetic(.realDivide, let lhs, let rhs):
            let left = write(lhs)
            return "(CAST(\(left) AS REAL) / \(write(rhs)))"
        case .arithmetic(let operation, let lhs, let rhs):
            let op = switch operation {
            case .add: "+"
            case .subtract: "-"
            case .multiply: "*"
            case .divide, .realDivide: "/"
            case .remainder: "%"
            }
            return binary(lhs, op, rhs)
        case .negate(let operand): return "(-\(write(operand)))"
        case .coalesce(let lhs, let rhs):
            let left = write(lhs)
            return "COALESCE(\(left), \(write(rhs)))"
        case .conditional(let test, let whenTrue, let whenFalse):
            let condition = write(test)
            let first = write(whenTrue)
            return "(CASE WHEN \(condition) THEN \(first) ELSE \(write(whenFalse)) END)"
        case .contains(let text, let part):
            // instr() finds the bytes anywhere, "" at 1; NUL bytes included.
            let haystack = write(text)
            return "(instr(\(haystack), \(write(part))) > 0)"
        case .startsWith(let text, let prefix):
            let haystack = write(text)
            return "(instr(\(haystack), \(write(prefix))) = 1)"
        case .isIn(let element, let values):
            let left = write(element)
            let list = values.map { value -> String in
                arguments.append(value)
                return "?\(arguments.count)"
            }
            return "(\(left) IN (\(list.joined(separator: ", "))))"
        }
    }

    private mutating func binary(_ lhs: QueryExpression, _ op: String, _ rhs: QueryExpression) -> String {
        let left = write(lhs)
        return "(\(left) \(op) \(write(rhs)))"
    }
}
