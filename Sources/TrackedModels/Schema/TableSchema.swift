import Foundation

/// The table a ``Tracked(table:)`` model maps onto: its name and columns, in declaration order.
///
/// The macro generates it; you read it to create tables or to inspect a model:
///
/// ```swift
/// print(Row._$schema.createTableSQL)
/// // CREATE TABLE IF NOT EXISTS "rows" ("id" INTEGER PRIMARY KEY NOT NULL, ...)
/// ```
public struct TableSchema: Sendable, Hashable {
    public let name: String
    public let columns: [ColumnSchema]
    /// The position of the primary key in ``columns``.
    public let primaryKeyIndex: Int

    /// The columns of to-one relationships, in column order.
    let relationshipColumns: [Int]
    /// The to-many relationships, in declaration order.
    public let relationships: [ToManySchema]

    public init(name: String, columns: [ColumnSchema], relationships: [ToManySchema] = []) {
        self.name = name
        self.columns = columns
        self.relationships = relationships
        relationshipColumns = columns.indices.filter { columns[$0].reference != nil }
        guard let index = columns.firstIndex(where: \.isPrimaryKey) else {
            preconditionFailure("table \(name) has no primary key column; mark one property with @PrimaryKey")
        }
        self.primaryKeyIndex = index
    }

    public var primaryKey: ColumnSchema { columns[primaryKeyIndex] }

    /// Whether SQLite assigns the key on insert: an optional integer primary key left `nil`.
    public var assignsPrimaryKey: Bool {
        primaryKey.type == .integer && primaryKey.isOptional
    }

    /// The index of the column with this name.
    public func columnIndex(named name: String) -> Int? {
        columns.firstIndex { $0.name == name }
    }

    /// `SELECT "id", "title", ... FROM "rows"`: every column of the model, in column order.
    var selectSQL: String {
        "SELECT \(columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")) FROM \(quoteIdentifier(name))"
    }

    /// ``selectSQL`` for one row, by primary key (one `?`).
    var selectByKeySQL: String {
        "\(selectSQL) WHERE \(quoteIdentifier(primaryKey.name)) = ?"
    }

    /// A `CREATE TABLE IF NOT EXISTS` statement for the model, for stores that create their
    /// tables (``ModelStore/Configuration/createsMissingTables``) and for tests.
    public var createTableSQL: String {
        let definitions = columns.map { column in
            var definition = "\(quoteIdentifier(column.name)) \(column.type.rawValue)"
            if column.isPrimaryKey { definition += " PRIMARY KEY" }
            if !column.isOptional { definition += " NOT NULL" }
            return definition
        }
        return "CREATE TABLE IF NOT EXISTS \(quoteIdentifier(name)) (\(definitions.joined(separator: ", ")))"
    }

    /// An index on each to-one relationship's column (`"entries_by_list_id"`), made with a
    /// table the store creates: reading a to-many, or the rows a live list re-evaluates when
    /// their target changes, reads the index instead of the table.
    public var createIndexSQL: [String] {
        relationshipColumns.map { index in
            let column = columns[index].name
            return "CREATE INDEX IF NOT EXISTS \(quoteIdentifier("\(name)_by_\(column)")) ON \(quoteIdentifier(name)) (\(quoteIdentifier(column)))"
        }
    }
}

/// One column of a ``TableSchema``.
public struct ColumnSchema: Sendable, Hashable {
    /// The column's name in the table.
    public let name: String
    /// The Swift property it is stored from.
    public let property: String
    public let type: ColumnType
    public let isOptional: Bool
    public let isPrimaryKey: Bool
    /// For a to-one relationship, the model it points at: the column holds that model's key.
    public let reference: Reference?

    /// The model a to-one relationship's foreign-key column points at.
    public struct Reference: Sendable, Hashable {
        /// The model type, by identity (the store finds its table among its models).
        public let model: ObjectIdentifier
        /// The model type's name, for messages.
        public let modelName: String
        /// The model type, for queries that read its columns through the relationship.
        // Unsafe only for the checker: the type is used for its static schema, column indexes
        // and key paths, which the macro generates as immutable, nonisolated members.
        nonisolated(unsafe) let target: any TrackedModel.Type

        public static func == (a: Reference, b: Reference) -> Bool { a.model == b.model }

        public func hash(into hasher: inout Hasher) { hasher.combine(model) }
    }

    /// A column that stores a ``ColumnValue``.
    ///
    /// ```swift
    /// ColumnSchema(name: "created_at", property: "createdAt", Date.self)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The column's name; `nil` for the property's name.
    ///   - property: The Swift property it is stored from.
    ///   - valueType: The property's type.
    ///   - isPrimaryKey: Whether the column is the table's primary key.
    public init<Value: ColumnValue>(name: String?, property: String, _ valueType: Value.Type, isPrimaryKey: Bool = false) {
        self.name = name ?? property
        self.property = property
        self.type = Value.columnType
        self.isOptional = Value.isOptional
        self.isPrimaryKey = isPrimaryKey
        self.reference = nil
    }

    /// The foreign-key column of a to-one relationship: it holds the key of a `Target` row, or
    /// NULL.
    ///
    /// ```swift
    /// ColumnSchema(name: nil, property: "list", TodoList?.self)   // the column list_id
    /// ```
    ///
    /// - Parameters:
    ///   - name: The column's name; `nil` for the property's name followed by `_id`
    ///     (`list_id` for `var list: TodoList?`).
    ///   - property: The Swift property it is stored from.
    ///   - valueType: The property's type, an optional model.
    ///   - isPrimaryKey: Must be false: a relationship is not a key.
    public init<Target: TrackedModel>(name: String?, property: String, _ valueType: Target?.Type, isPrimaryKey: Bool = false) {
        precondition(!isPrimaryKey, "a relationship cannot be the primary key; mark a column property with @PrimaryKey")
        self.name = name ?? property + "_id"
        self.property = property
        // The key's type, not the target's schema: reading that here would recurse for a model
        // that points at itself.
        self.type = Target.PrimaryKeyValue.columnType
        self.isOptional = true
        self.isPrimaryKey = false
        self.reference = Reference(model: ObjectIdentifier(Target.self), modelName: String(describing: Target.self), target: Target.self)
    }

    /// A to-one relationship that is not optional: refused, since a row's foreign key may name
    /// no row (a target deleted, or another process's write).
    ///
    /// - Parameters:
    ///   - name: The column's name.
    ///   - property: The Swift property.
    ///   - valueType: The property's type, a model that is not optional.
    ///   - isPrimaryKey: Unused.
    @available(*, unavailable, message: "a to-one relationship must be optional: declare it as `Target?`")
    public init<Target: TrackedModel>(name: String?, property: String, _ valueType: Target.Type, isPrimaryKey: Bool = false) {
        fatalError("unavailable")
    }
}

