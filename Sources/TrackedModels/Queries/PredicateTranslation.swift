public import Foundation

/// Turns a `#Predicate` into a ``QueryExpression``: the one compiled form that an engine
/// writes as SQL (values bound, never interpolated) and that live results evaluate in memory.
///
/// Each supported expression type of Foundation's `PredicateExpressions` translates itself
/// (``TranslatableExpression``); anything else is refused with an error that names it.
struct PredicateTranslation {
    /// The columns the predicate may read, with the joins it has made so far.
    private(set) var columns: QueryColumns
    let root: PredicateExpressions.VariableID
    /// Variables bound by `flatMap` and the like, to what they stand for.
    var bindings: [PredicateExpressions.VariableID: QueryExpression] = [:]
    /// Variables bound by `flatMap` to the target of a to-one relationship (`$0.list?.title`),
    /// to their join.
    var relations: [PredicateExpressions.VariableID: Int] = [:]

    init(root: PredicateExpressions.VariableID, columns: QueryColumns) {
        self.root = root
        self.columns = columns
    }

    /// What `#Predicate` can hold that translates to SQL, for error messages.
    static let supported = "comparisons (==, !=, <, <=, >, >=), &&, ||, !, == nil and != nil, optional chaining and ??, "
        + "+, -, * and % on numbers, / on numbers, unary minus, the ternary operator, String.contains(_:) and "
        + "starts(with:), and [values].contains(property), on properties of the model, properties of what a to-one "
        + "relationship points at ($0.list?.title), and literal or captured values"

    mutating func translate(_ expression: Any) throws -> QueryExpression {
        guard let translatable = expression as? any TranslatableExpression else {
            throw Self.unsupported(expression)
        }
        return try translatable.translated(&self)
    }

    /// The join of a to-one relationship that an expression names on the model
    /// (`$0.list`); nil for any other expression.
    mutating func relation(_ expression: Any) throws -> Int? {
        guard let keyPath = expression as? any KeyPathNaming, keyPath.rootVariable == root,
              let column = columns.relationship(of: keyPath.anyKeyPath)
        else { return nil }
        return try columns.join(column)
    }

    static func unsupported(_ expression: Any, _ detail: String? = nil) -> StoreError {
        let name = String(describing: type(of: expression)).split(separator: "<").first.map(String.init) ?? "\(type(of: expression))"
        return StoreError(
            code: .unsupportedPredicate,
            message: "the predicate uses \(name)\(detail.map { " (\($0))" } ?? ""), which has no exact SQL translation; "
                + "nothing was fetched. Supported: \(supported)"
        )
    }

    /// A literal value of a predicate as a stored value (a NaN as NULL, which SQLite binds for
    /// it), or nil when its type is not a column type.
    static func storedValue(_ value: Any) -> SQLValue? {
        if let value = value as? any ColumnValue { return value.sqlValue.nanAsNull }
        return nil
    }
}

/// A `PredicateExpressions` type that translates itself into a ``QueryExpression``.
protocol TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression
}


extension PredicateExpressions.Value: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        guard let value = PredicateTranslation.storedValue(value) else {
            throw PredicateTranslation.unsupported(self, "a value of type \(Output.self), which is no column type")
        }
        return .value(value)
    }
}

extension PredicateExpressions.NilLiteral: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression { .value(.null) }
}

extension PredicateExpressions.Variable: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        guard let bound = translation.bindings[key] else {
            throw PredicateTranslation.unsupported(self, "the model itself, where a property of it is needed")
        }
        return bound
    }
}

extension PredicateExpressions.KeyPath: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        if let variable = rootVariable, variable == translation.root {
            if let column = translation.columns.column(of: keyPath) { return .column(column) }
            if translation.columns.relationship(of: keyPath) != nil {
                throw PredicateTranslation.unsupported(self, "\(keyPath), a to-one relationship compared as a whole; compare a property of its target, such as $0.list?.id")
            }
        } else if let variable = rootVariable, let join = translation.relations[variable] {
            if let position = translation.columns.position(of: keyPath, through: join) { return .column(position) }
            throw PredicateTranslation.unsupported(self, "\(keyPath), which is not a stored column of what the relationship points at (one step only)")
        }
        throw PredicateTranslation.unsupported(self, "\(keyPath), which is not a stored column of the model")
    }
}

/// A `KeyPath` expression, whatever its types.
protocol KeyPathNaming {
    /// The variable it is applied to, when it is applied to one.
    var rootVariable: PredicateExpressions.VariableID? { get }
    var anyKeyPath: AnyKeyPath { get }
}

extension PredicateExpressions.KeyPath: KeyPathNaming {
    var rootVariable: PredicateExpressions.VariableID? { (root as? any VariableIdentifying)?.variableID }
    var anyKeyPath: AnyKeyPath { keyPath }
}

/// A `Variable` expression, whatever its type.
protocol VariableIdentifying {
    var variableID: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: VariableIdentifying {
    var variableID: PredicateExpressions.VariableID { key }
}

extension PredicateExpressions.Equal: TranslatableExpression {
    // `IS` compares as Swift's `==` does, nil included: NULL IS NULL is true.
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .compare(.equal, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .compare(.notEqual, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        let comparison: QueryExpression.Comparison = switch op {
        case .lessThan: .less
        case .lessThanOrEqual: .lessOrEqual
        case .greaterThan: .greater
        case .greaterThanOrEqual: .greaterOrEqual
        }
        return .compare(comparison, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.Conjunction: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .and(try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .or(try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .not(try translation.translate(wrapped))
    }
}

extension PredicateExpressions.Arithmetic: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        let operation: QueryExpression.Arithmetic = switch op {
        case .add: .add
        case .subtract: .subtract
        case .multiply: .multiply
        }
        return .arithmetic(operation, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.IntRemainder: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .arithmetic(.remainder, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.IntDivision: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .arithmetic(.divide, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.FloatDivision: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        // The left side as a real, so that a whole-number REAL stored as INTEGER divides as Swift does.
        .arithmetic(.realDivide, try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.UnaryMinus: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .negate(try translation.translate(wrapped))
    }
}

extension PredicateExpressions.NilCoalesce: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .coalesce(try translation.translate(lhs), try translation.translate(rhs))
    }
}

extension PredicateExpressions.ForcedUnwrap: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        // A nil makes the comparison around it NULL: the row does not match (where Swift's
        // evaluation would throw).
        try translation.translate(inner)
    }
}

extension PredicateExpressions.OptionalFlatMap: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        if let join = try translation.relation(wrapped) {
            // `$0.list?.title`: the target's columns through the join. A relationship that points
            // at nothing, or at a key with no row (as reading `row.list` finds nil), is nil.
            translation.relations[variable.key] = join
            defer { translation.relations[variable.key] = nil }
            let transformed = try translation.translate(transform)
            let targetKey = QueryExpression.column(translation.columns.joins[join].offset + translation.columns.joins[join].target.primaryKeyIndex)
            return .conditional(.compare(.equal, targetKey, .value(.null)), .value(.null), transformed)
        }
        let optional = try translation.translate(wrapped)
        translation.bindings[variable.key] = optional
        defer { translation.bindings[variable.key] = nil }
        let transformed = try translation.translate(transform)
        // nil stays nil; otherwise the transform of the unwrapped value.
        return .conditional(.compare(.equal, optional, .value(.null)), .value(.null), transformed)
    }
}

extension PredicateExpressions.Conditional: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        .conditional(try translation.translate(test), try translation.translate(trueBranch), try translation.translate(falseBranch))
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        guard Base.Output.self == String.self, Other.Output.self == String.self else {
            throw PredicateTranslation.unsupported(self, "contains(_:) on \(Base.Output.self); only String.contains(_:) translates")
        }
        // By UTF-8 bytes, "" included, as Swift's contains does (it differs only where Swift
        // matches whole characters: a decomposed é contains "e" here).
        return .contains(try translation.translate(base), try translation.translate(other))
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        guard Base.Output.self == String.self, Prefix.Output.self == String.self else {
            throw PredicateTranslation.unsupported(self, "starts(with:) on \(Base.Output.self); only String.starts(with:) translates")
        }
        return .startsWith(try translation.translate(base), try translation.translate(prefix))
    }
}

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    func translated(_ translation: inout PredicateTranslation) throws -> QueryExpression {
        guard let list = sequence as? any ConstantSequence else {
            throw PredicateTranslation.unsupported(self, "contains(_:) on something other than a literal or captured array")
        }
        guard let values = list.storedValues else {
            throw PredicateTranslation.unsupported(self, "an array of \(LHS.Output.Element.self), which is no column type")
        }
        let element = try translation.translate(element)
        var members: [SQLValue] = []
        for value in values where value != .null && !members.contains(value) { members.append(value) }
        let membership = QueryExpression.isIn(element, members)
        // Swift's [nil].contains(nil) is true; SQL's NULL IN (NULL) is not.
        return values.contains(.null) ? .or(.compare(.equal, element, .value(.null)), membership) : membership
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
