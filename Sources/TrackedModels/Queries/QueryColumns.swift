/// The columns a query of one model can read: the model's own, and the columns of what a
/// to-one relationship points at (`$0.list?.title`, `\Row.list?.title`), each relationship
/// through one ``CompiledQuery/Join``, made when the predicate or the order first names it.
struct QueryColumns {
    let model: any TrackedModel.Type
    private let tableOf: (ObjectIdentifier) throws -> Int
    private(set) var joins: [CompiledQuery.Join] = []

    init(model: any TrackedModel.Type, tableOf: @escaping (ObjectIdentifier) throws -> Int) {
        self.model = model
        self.tableOf = tableOf
    }

    var schema: TableSchema { model._$schema }

    /// The column a key path of the model names, when it is not a relationship.
    func column(of keyPath: AnyKeyPath) -> Int? {
        guard let column = model._$columnIndex(of: keyPath), schema.columns[column].reference == nil else { return nil }
        return column
    }

    /// The to-one relationship's column a key path of the model names (`\Row.list`).
    func relationship(of keyPath: AnyKeyPath) -> Int? {
        guard let column = model._$columnIndex(of: keyPath), schema.columns[column].reference != nil else { return nil }
        return column
    }

    /// The join through a relationship's column, made the first time.
    mutating func join(_ column: Int) throws -> Int {
        if let existing = joins.firstIndex(where: { $0.column == column }) { return existing }
        let reference = schema.columns[column].reference!
        let targetTable: Int
        do {
            targetTable = try tableOf(reference.model)
        } catch {
            throw StoreError(
                code: .modelNotRegistered,
                message: "the query reads \(model).\(schema.columns[column].property), which points at \(reference.modelName), not one of this store's models; pass it in `models:` when opening the store"
            )
        }
        let offset = joins.last.map { $0.offset + $0.target.columns.count } ?? schema.columns.count
        joins.append(CompiledQuery.Join(column: column, targetTable: targetTable, target: reference.target._$schema, offset: offset))
        return joins.count - 1
    }

    /// The position of a target's column, named by a key path of the target, through a join;
    /// nil when the key path names no column, or a relationship (one step only).
    func position(of keyPath: AnyKeyPath, through join: Int) -> Int? {
        let target = schema.columns[joins[join].column].reference!.target
        guard let column = target._$columnIndex(of: keyPath), target._$schema.columns[column].reference == nil else { return nil }
        return joins[join].offset + column
    }

    /// The position of what a key path of the model names: one of its columns, or a column of
    /// a to-one relationship's target (`\Row.list?.title`); nil for anything else.
    mutating func position(of keyPath: AnyKeyPath) throws -> Int? {
        if let column = column(of: keyPath) { return column }
        for relationship in schema.relationshipColumns {
            let target = schema.columns[relationship].reference!.target
            let base = model._$columnKeyPaths[relationship]
            for (column, leaf) in target._$chainedKeyPaths.enumerated() where target._$schema.columns[column].reference == nil {
                guard let chained = base.appending(path: leaf), Self.sameChain(chained, keyPath) else { continue }
                return joins[try join(relationship)].offset + column
            }
        }
        return nil
    }

    /// The Swift path of a position, for messages: `title`, or `list?.title`.
    func propertyPath(at position: Int) -> String {
        guard let join = joins.lastIndex(where: { $0.offset <= position }) else { return schema.columns[position].property }
        let target = joins[join].target.columns[position - joins[join].offset]
        return "\(schema.columns[joins[join].column].property)?.\(target.property)"
    }

    /// The table's columns among the positions read (with each join's column), and the joins
    /// with the target columns each reads.
    func split(_ positions: Set<Int>) -> (own: Set<Int>, joins: [CompiledQuery.Join]) {
        var own = Set(joins.map(\.column))
        var joins = joins
        for position in positions {
            if let join = joins.lastIndex(where: { $0.offset <= position }) {
                joins[join].columnsRead.insert(position - joins[join].offset)
            } else {
                own.insert(position)
            }
        }
        return (own, joins)
    }

    /// Whether two key paths name the same chain of properties. `==` is not enough: a key path
    /// appended to another (`\Row.list` and `\TodoList?.?.title`) differs from the literal of
    /// the same optional chain (`\Row.list?.title`) in a flag of its header, while their
    /// components, which their hash and description are made of, are the same.
    static func sameChain(_ a: AnyKeyPath, _ b: AnyKeyPath) -> Bool {
        if a == b { return true }
        return type(of: a) == type(of: b) && a.hashValue == b.hashValue && String(describing: a) == String(describing: b)
    }
}
