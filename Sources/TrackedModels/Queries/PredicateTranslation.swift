public import Foundation

/// How a predicate's key paths are written: as the table's columns (to query the table), or as
/// numbered parameters (to evaluate one row whose values are bound, with SQLite's own rules).
enum ColumnReference {
    /// The predicate's values are `?1`, `?2`, ...
    case tableColumns
    /// Column `i` is `?(i + 1)`; the predicate's values follow.
    case parameters
}

/// Turns a `#Predicate` into SQL with bound values, never interpolated.
///
/// Each supported expression type of Foundation's `PredicateExpressions` writes its own SQL
/// (``SQLWritableExpression``); anything else is refused with an error that names it. Values
/// are numbered parameters, collected in ``arguments`` in number order, so a piece of SQL can
/// appear twice without binding its values twice.
struct PredicateTranslation {
    let schema: TableSchema
    let columnIndex: (AnyKeyPath) -> Int?
    let root: PredicateExpressions.VariableID
    let columns: ColumnReference
    /// Variables bound by `flatMap` and the like, to the SQL of what they stand for.
    var bindings: [PredicateExpressions.VariableID: String] = [:]
    /// The columns the predicate reads.
    private(set) var columnsRead: Set<Int> = []
    /// The values bound, in parameter-number order.
    private(set) var arguments: [SQLValue] = []
    /// The first number of the predicate's values.
    private let firstParameter: Int

    init(schema: TableSchema, root: PredicateExpressions.VariableID, columns: ColumnReference, columnIndex: @escaping (AnyKeyPath) -> Int?) {
        self.schema = schema
        self.root = root
        self.columns = columns
        self.columnIndex = columnIndex
        firstParameter = columns == .parameters ? schema.columns.count + 1 : 1
    }

    /// What `#Predicate` can hold that translates to SQL, for error messages.
    static let supported = "comparisons (==, !=, <, <=, >, >=), &&, ||, !, == nil and != nil, optional chaining and ??, "
        + "+, -, * and % on numbers, / on numbers, unary minus, the ternary operator, String.contains(_:) and "
        + "starts(with:), and [values].contains(property), on properties of the model and literal or captured values"

    mutating func translate(_ expression: Any) throws -> String {
        guard let writable = expression as? any SQLWritableExpression else {
            throw Self.unsupported(expression)
        }
        return try writable.sql(&self)
    }

    /// A value, bound as a parameter.
    mutating func bind(_ value: SQLValue) -> String {
        arguments.append(value)
        return "?\(firstParameter + arguments.count - 1)"
    }

    /// A column of the model. Text compares by its bytes whatever collation the table
    /// declares, as a bound value (and Swift, by Unicode scalars) does.
    mutating func column(_ index: Int) -> String {
        columnsRead.insert(index)
        switch columns {
        case .tableColumns: return schema.columns[index].sqlExpression
        case .parameters: return "?\(index + 1)"
        }
    }

    static func unsupported(_ expression: Any, _ detail: String? = nil) -> StoreError {
        let name = String(describing: type(of: expression)).split(separator: "<").first.map(String.init) ?? "\(type(of: expression))"
        return StoreError(
            code: .unsupportedPredicate,
            message: "the predicate uses \(name)\(detail.map { " (\($0))" } ?? ""), which has no exact SQL translation; "
                + "nothing was fetched. Supported: \(supported)"
        )
    }

    /// A literal value of a predicate as a stored value, or nil when its type is not a column
    /// type.
    static func storedValue(_ value: Any) -> SQLValue? {
        if let value = value as? any ColumnValue { return value.sqlValue }
        return nil
    }
}

/// A `PredicateExpressions` type that writes itself as SQL.
protocol SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String
}

private func binary(_ translation: inout PredicateTranslation, _ lhs: Any, _ op: String, _ rhs: Any) throws -> String {
    let left = try translation.translate(lhs)
    let right = try translation.translate(rhs)
    return "(\(left) \(op) \(right))"
}

extension PredicateExpressions.Value: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard let value = PredicateTranslation.storedValue(value) else {
            throw PredicateTranslation.unsupported(self, "a value of type \(Output.self), which is no column type")
        }
        return translation.bind(value)
    }
}

extension PredicateExpressions.NilLiteral: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { "NULL" }
}

extension PredicateExpressions.Variable: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard let bound = translation.bindings[key] else {
            throw PredicateTranslation.unsupported(self, "the model itself, where a property of it is needed")
        }
        return bound
    }
}

extension PredicateExpressions.KeyPath: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard let variable = root as? any VariableIdentifying, variable.variableID == translation.root,
              let index = translation.columnIndex(keyPath)
        else {
            throw PredicateTranslation.unsupported(self, "\(keyPath), which is not a stored column of the model")
        }
        return translation.column(index)
    }
}

/// A `Variable` expression, whatever its type.
protocol VariableIdentifying {
    var variableID: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: VariableIdentifying {
    var variableID: PredicateExpressions.VariableID { key }
}

extension PredicateExpressions.Equal: SQLWritableExpression {
    // `IS` compares as Swift's `==` does, nil included: NULL IS NULL is true.
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "IS", rhs) }
}

extension PredicateExpressions.NotEqual: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "IS NOT", rhs) }
}

extension PredicateExpressions.Comparison: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        let op = switch self.op {
        case .lessThan: "<"
        case .lessThanOrEqual: "<="
        case .greaterThan: ">"
        case .greaterThanOrEqual: ">="
        }
        return try binary(&translation, lhs, op, rhs)
    }
}

extension PredicateExpressions.Conjunction: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "AND", rhs) }
}

extension PredicateExpressions.Disjunction: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "OR", rhs) }
}

extension PredicateExpressions.Negation: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        "(NOT \(try translation.translate(wrapped)))"
    }
}

extension PredicateExpressions.Arithmetic: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        let op = switch self.op {
        case .add: "+"
        case .subtract: "-"
        case .multiply: "*"
        }
        return try binary(&translation, lhs, op, rhs)
    }
}

extension PredicateExpressions.IntRemainder: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "%", rhs) }
}

extension PredicateExpressions.IntDivision: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String { try binary(&translation, lhs, "/", rhs) }
}

extension PredicateExpressions.FloatDivision: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        // Both sides as REAL, so that a whole-number REAL stored as INTEGER divides as Swift does.
        let left = try translation.translate(lhs)
        let right = try translation.translate(rhs)
        return "(CAST(\(left) AS REAL) / \(right))"
    }
}

extension PredicateExpressions.UnaryMinus: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        "(-\(try translation.translate(wrapped)))"
    }
}

extension PredicateExpressions.NilCoalesce: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        let left = try translation.translate(lhs)
        let right = try translation.translate(rhs)
        return "COALESCE(\(left), \(right))"
    }
}

extension PredicateExpressions.ForcedUnwrap: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        // A nil makes the comparison around it NULL: the row does not match (where Swift's
        // evaluation would throw).
        try translation.translate(inner)
    }
}

extension PredicateExpressions.OptionalFlatMap: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        let optional = try translation.translate(wrapped)
        translation.bindings[variable.key] = optional
        defer { translation.bindings[variable.key] = nil }
        let transformed = try translation.translate(transform)
        // nil stays nil; otherwise the transform of the unwrapped value.
        return "(CASE WHEN \(optional) IS NULL THEN NULL ELSE \(transformed) END)"
    }
}

extension PredicateExpressions.Conditional: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        let condition = try translation.translate(test)
        let whenTrue = try translation.translate(trueBranch)
        let whenFalse = try translation.translate(falseBranch)
        return "(CASE WHEN \(condition) THEN \(whenTrue) ELSE \(whenFalse) END)"
    }
}

extension PredicateExpressions.CollectionContainsCollection: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard Base.Output.self == String.self, Other.Output.self == String.self else {
            throw PredicateTranslation.unsupported(self, "contains(_:) on \(Base.Output.self); only String.contains(_:) translates")
        }
        // instr() finds the UTF-8 text anywhere, "" included, as Swift's contains does (it
        // differs only where Swift matches whole characters: a decomposed é contains "e" here).
        let base = try translation.translate(base)
        let other = try translation.translate(other)
        return "(instr(\(base), \(other)) > 0)"
    }
}

extension PredicateExpressions.SequenceStartsWith: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard Base.Output.self == String.self, Prefix.Output.self == String.self else {
            throw PredicateTranslation.unsupported(self, "starts(with:) on \(Base.Output.self); only String.starts(with:) translates")
        }
        let base = try translation.translate(base)
        let prefix = try translation.translate(prefix)
        return "(substr(\(base), 1, length(\(prefix))) = \(prefix))"
    }
}

extension PredicateExpressions.SequenceContains: SQLWritableExpression {
    func sql(_ translation: inout PredicateTranslation) throws -> String {
        guard let list = sequence as? any ConstantSequence else {
            throw PredicateTranslation.unsupported(self, "contains(_:) on something other than a literal or captured array")
        }
        guard let values = list.storedValues else {
            throw PredicateTranslation.unsupported(self, "an array of \(LHS.Output.Element.self), which is no column type")
        }
        let element = try translation.translate(element)
        var placeholders: [String] = []
        for value in values where value != .null {
            placeholders.append(translation.bind(value))
        }
        let membership = "\(element) IN (\(placeholders.joined(separator: ", ")))"
        // Swift's [nil].contains(nil) is true; SQL's NULL IN (NULL) is not.
        return values.contains(.null) ? "(\(element) IS NULL OR \(membership))" : "(\(membership))"
    }
}

/// A literal or captured array in a predicate.
protocol ConstantSequence {
    /// Its elements as stored values, or nil when they are not of a column type.
    var storedValues: [SQLValue]? { get }
}

extension PredicateExpressions.Value: ConstantSequence where Output: Sequence {
    var storedValues: [SQLValue]? {
        var values: [SQLValue] = []
        for element in value {
            guard let stored = PredicateTranslation.storedValue(element) else { return nil }
            values.append(stored)
        }
        return values
    }
}
