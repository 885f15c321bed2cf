/// A compiled query as PostgreSQL's SQL, with the semantics the in-memory evaluator has (those
/// of SQLite, see ``QueryExpression``): values bound as `$n` parameters cast to their kind;
/// text compared by its bytes (`COLLATE "C"`); `==` as `IS NOT DISTINCT FROM`; NULLs first in
/// an ascending order, as in SQLite; division and remainder by zero NULL (`NULLIF`), and so is
/// a real result that is NaN; a comparison used as a number 0 or 1, and a number used as a
/// condition true when not 0. `PostgresQueryAgreementTests` checks this against the evaluator
/// on generated queries.
///
/// Two things SQLite does cannot be said here: the `localizedStandard` order (a comparison of
/// Swift's, which SQLite calls through a registered collation) is refused with
/// ``StoreError/Code/unsupportedPredicate``, and integer arithmetic that overflows fails the
/// read (``StoreError/Code/valueNotStorable``) instead of turning into a real. Nor can text hold
/// U+0000 on PostgreSQL: a value or literal with one is refused the same way.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/functions-comparison.html>,
/// <https://www.postgresql.org/docs/current/collation.html>, <https://www.postgresql.org/docs/current/queries-order.html>
struct PostgreSQLDialect {
    /// The select of a query's matching rows in order, at most `limit` of them (no offset).
    static func select(_ query: CompiledQuery, limit: Int?) throws -> (sql: String, arguments: [SQLValue]) {
        var writer = PostgreSQLDialect(query)
        var sql = query.joins.isEmpty
            ? query.schema.selectSQL
            : "SELECT \((0..<query.width).map(writer.name).joined(separator: ", ")) FROM \(writer.source)"
        if let predicate = query.predicate { sql += " WHERE \(writer.condition(predicate))" }
        sql += " ORDER BY " + (try query.sort.map(writer.write)).joined(separator: ", ")
        if let limit { sql += " LIMIT \(limit)" }
        return (sql, writer.arguments)
    }

    /// The count of a query's matching rows (no window).
    static func count(_ query: CompiledQuery) -> (sql: String, arguments: [SQLValue]) {
        var writer = PostgreSQLDialect(query)
        var sql = "SELECT count(*) FROM \(writer.source)"
        if let predicate = query.predicate { sql += " WHERE \(writer.condition(predicate))" }
        return (sql, writer.arguments)
    }

    /// A query's predicate as a condition, with the `FROM` clause it reads (the table and its
    /// joins), for tests that compare its value with the evaluator's row by row.
    static func condition(_ query: CompiledQuery) -> (sql: String, from: String, arguments: [SQLValue]) {
        var writer = PostgreSQLDialect(query)
        let sql = query.predicate.map { writer.condition($0) } ?? "TRUE"
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

    /// A column in expressions and orders: text with `COLLATE "C"`, whatever the table or the
    /// database declares.
    private func column(_ position: Int) -> String {
        query.column(at: position).type == .text ? "\(name(position)) COLLATE \"C\"" : name(position)
    }

    private func write(_ term: CompiledQuery.SortTerm) throws -> String {
        #if canImport(Darwin)
        guard term.textOrder == .binary else {
            throw StoreError(
                code: .unsupportedPredicate,
                message: "the localizedStandard order of \(query.column(at: term.column).property) has no PostgreSQL translation; sort with the default (binary) text order"
            )
        }
        #endif
        return "\(column(term.column)) \(term.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")"
    }

    /// Whether an expression is a condition in SQL (a boolean), rather than a value.
    private static func isCondition(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .compare, .and, .or, .not, .contains, .startsWith, .isIn: true
        default: false
        }
    }

    /// An expression where SQL wants a condition: a value is true when it is not 0.
    private mutating func condition(_ expression: QueryExpression) -> String {
        let sql = write(expression)
        return Self.isCondition(expression) ? sql : "(\(sql) <> 0)"
    }

    /// An expression where SQL wants a value: a condition is 1 or 0 (or NULL). (PostgreSQL
    /// casts a boolean to `integer` only, so a `CASE` says it.)
    private mutating func value(_ expression: QueryExpression) -> String {
        let sql = write(expression)
        return Self.isCondition(expression) ? "(CASE WHEN \(sql) THEN 1 WHEN NOT \(sql) THEN 0 END)" : sql
    }

    /// An operand of arithmetic: a NULL is typed (PostgreSQL cannot pick `-` for an untyped
    /// one); the result is NULL whatever the type.
    private mutating func operand(_ expression: QueryExpression) -> String {
        expression == .value(.null) ? "NULL::BIGINT" : value(expression)
    }

    /// Whether an expression's value is a real (as Swift types it: a real column or value, or
    /// arithmetic with one).
    private func isReal(_ expression: QueryExpression) -> Bool {
        switch expression {
        case .column(let position): query.column(at: position).type == .real
        case .value(let value): if case .real = value { true } else { false }
        case .arithmetic(.realDivide, _, _): true
        case .arithmetic(_, let lhs, let rhs), .coalesce(let lhs, let rhs), .conditional(_, let lhs, let rhs): isReal(lhs) || isReal(rhs)
        case .negate(let operand): isReal(operand)
        default: false
        }
    }

    private mutating func bind(_ value: SQLValue) -> String {
        arguments.append(value)
        let type = switch value {
        case .null: "TEXT"
        case .integer: "BIGINT"
        case .real: "DOUBLE PRECISION"
        case .text: "TEXT"
        case .blob: "BYTEA"
        }
        return "$\(arguments.count)::\(type)"
    }

    private mutating func write(_ expression: QueryExpression) -> String {
        switch expression {
        case .column(let index):
            return column(index)
        case .value(.null):
            return "NULL"
        case .value(let value):
            return bind(value)
        case .compare(let comparison, let lhs, let rhs):
            let op = switch comparison {
            case .equal: "IS NOT DISTINCT FROM"
            case .notEqual: "IS DISTINCT FROM"
            case .less: "<"
            case .lessOrEqual: "<="
            case .greater: ">"
            case .greaterOrEqual: ">="
            }
            let left = value(lhs)
            return "(\(left) \(op) \(value(rhs)))"
        case .and(let lhs, let rhs):
            let left = condition(lhs)
            return "(\(left) AND \(condition(rhs)))"
        case .or(let lhs, let rhs):
            let left = condition(lhs)
            return "(\(left) OR \(condition(rhs)))"
        case .not(let operand):
            return "(NOT \(condition(operand)))"
        case .arithmetic(let operation, let lhs, let rhs):
            let left = operand(lhs)
            let right = operand(rhs)
            let sql = switch operation {
            case .add: "(\(left) + \(right))"
            case .subtract: "(\(left) - \(right))"
            case .multiply: "(\(left) * \(right))"
            case .divide: "(\(left) / NULLIF(\(right), 0))"
            case .remainder: "(\(left) % NULLIF(\(right), 0))"
            case .realDivide: "(CAST(\(left) AS DOUBLE PRECISION) / NULLIF(\(right), 0))"
            }
            // A real result that is NaN (infinity minus infinity) is NULL, as in SQLite.
            return isReal(expression) ? "NULLIF(\(sql), 'NaN'::DOUBLE PRECISION)" : sql
        case .negate(let operand):
            return "(-\(self.operand(operand)))"
        case .coalesce(let lhs, let rhs):
            let left = value(lhs)
            return "COALESCE(\(left), \(value(rhs)))"
        case .conditional(let test, let whenTrue, let whenFalse):
            let test = condition(test)
            let first = value(whenTrue)
            return "(CASE WHEN \(test) THEN \(first) ELSE \(value(whenFalse)) END)"
        case .contains(let text, let part):
            let haystack = value(text)
            return "(strpos(\(haystack), \(value(part))) > 0)"
        case .startsWith(let text, let prefix):
            let haystack = value(text)
            return "(strpos(\(haystack), \(value(prefix))) = 1)"
        case .isIn(let element, let values):
            guard !values.isEmpty else { return "FALSE" }
            let left = value(element)
            let list = values.map { bind($0) }
            return "(\(left) IN (\(list.joined(separator: ", "))))"
        }
    }
}

extension PostgreSQLDialect {
    /// An insert of one row in `$n` parameters, in column order (the key left out where the
    /// database assigns it, and then returned).
    static func insert(_ schema: TableSchema, assignsKey: Bool) -> String {
        let columns = schema.columns.filter { !(assignsKey && $0.isPrimaryKey) }.map { quoteIdentifier($0.name) }
        let placeholders = (1...max(columns.count, 1)).prefix(columns.count).map { "$\($0)" }
        var sql = columns.isEmpty
            ? "INSERT INTO \(quoteIdentifier(schema.name)) DEFAULT VALUES"
            : "INSERT INTO \(quoteIdentifier(schema.name)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", ")))"
        if assignsKey { sql += " RETURNING \(quoteIdentifier(schema.primaryKey.name))" }
        return sql
    }

    /// An update of one row by key: `sets` assigned, `adds` incremented (and returned), then the
    /// key, in `$n` parameters in that order.
    static func update(_ schema: TableSchema, sets: [Int], adds: [Int]) -> String {
        var parameter = 0
        func next() -> String {
            parameter += 1
            return "$\(parameter)"
        }
        let assignments = sets.map { "\(quoteIdentifier(schema.columns[$0].name)) = \(next())" }
            + adds.map { "\(quoteIdentifier(schema.columns[$0].name)) = \(quoteIdentifier(schema.columns[$0].name)) + \(next())" }
        let returning = adds.isEmpty ? "1" : adds.map { quoteIdentifier(schema.columns[$0].name) }.joined(separator: ", ")
        return "UPDATE \(quoteIdentifier(schema.name)) SET \(assignments.joined(separator: ", ")) WHERE \(quoteIdentifier(schema.primaryKey.name)) = \(next()) RETURNING \(returning)"
    }
}
