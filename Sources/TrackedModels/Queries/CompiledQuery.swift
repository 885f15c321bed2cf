import Foundation

/// A ``FetchDescriptor`` compiled once for one table into two forms that agree: a predicate
/// tree and an order that an engine writes as SQL in its dialect, and the same tree and order
/// evaluated in memory over a row's values (``matches(_:)``, ``entry(of:)`` in ``entryOrder``), which live
/// results use instead of asking the database about each changed row.
///
/// A query may read the columns of what a to-one relationship points at
/// (`$0.list?.title`): each such relationship is a ``Join``, and a row of the query holds the
/// table's columns followed by each join's target columns (NULL where the relationship
/// points at nothing, or at a key with no row). Positions in the tree and the order are
/// positions in that row.
struct CompiledQuery: Hashable {
    /// One sort term: a position in the query's row, its direction, and how its text compares.
    struct SortTerm: Hashable {
        var column: Int
        var ascending: Bool
        var textOrder: TextOrder = .binary
    }

    /// A to-one relationship the query reads through: the target's table, joined on its
    /// primary key (a left join: a row whose relationship points at nothing stays).
    struct Join: Hashable {
        /// The relationship's column in the query's table.
        var column: Int
        var targetTable: Int
        var target: TableSchema
        /// Where the target's columns start in the query's row.
        var offset: Int
        /// The target's columns the query reads: a change to another cannot change the result.
        var columnsRead: Set<Int> = []
    }

    /// What the query is: its table, predicate, order, joins and window.
    private struct Parts: Hashable, Sendable {
        let table: Int
        let schema: TableSchema
        let predicate: QueryExpression?
        let sort: [SortTerm]
        let columnsRead: Set<Int>
        let joins: [Join]
        let limit: Int?
        let offset: Int
    }

    /// The parts, kept in one object: a query goes with every read of a row that a live form
    /// makes at a change, and copying it then costs one retain, not one for each part.
    private final class Box: Sendable {
        let parts: Parts

        init(_ parts: Parts) {
            self.parts = parts
        }
    }

    private let box: Box

    var table: Int { box.parts.table }
    var schema: TableSchema { box.parts.schema }
    /// The predicate, or nil for every row.
    var predicate: QueryExpression? { box.parts.predicate }
    /// The order: the descriptors' columns, then the primary key.
    var sort: [SortTerm] { box.parts.sort }
    /// The table's columns the predicate or the order reads, with the column of each join: a
    /// change to any other column of a row cannot change the result.
    var columnsRead: Set<Int> { box.parts.columnsRead }
    var joins: [Join] { box.parts.joins }
    var limit: Int? { box.parts.limit }
    var offset: Int { box.parts.offset }

    init(
        table: Int, schema: TableSchema, predicate: QueryExpression?, sort: [SortTerm], columnsRead: Set<Int>,
        joins: [Join] = [], limit: Int?, offset: Int
    ) {
        box = Box(Parts(
            table: table, schema: schema, predicate: predicate, sort: sort, columnsRead: columnsRead, joins: joins,
            limit: limit, offset: offset
        ))
    }

    static func == (a: CompiledQuery, b: CompiledQuery) -> Bool {
        a.box === b.box || a.box.parts == b.box.parts
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(box.parts)
    }

    /// The number of values in a row of the query.
    var width: Int { joins.last.map { $0.offset + $0.target.columns.count } ?? schema.columns.count }

    /// Whether the predicate or the order reads a target's column: then which rows match, and
    /// in which order, depends on the targets.
    var readsThroughJoins: Bool {
        let own = schema.columns.count
        return sort.contains { $0.column >= own } || (predicate?.columns.contains { $0 >= own } ?? false)
    }
}

extension CompiledQuery {
    /// Compiles a descriptor for a model's table; throws what has no translation.
    ///
    /// - Parameter tableOf: The store's table of a model, by identity (a relationship's target).
    init<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>, table: Int, tableOf: @escaping (ObjectIdentifier) throws -> Int) throws {
        self = try Self.compile(descriptor, table: table, tableOf: tableOf, reading: []).query
    }

    /// Compiles a descriptor, and the positions in the query's row of `keyPaths` (a column, or
    /// a column of a to-one relationship's target), which the query reads too.
    static func compile<Model: TrackedModel>(
        _ descriptor: FetchDescriptor<Model>, table: Int, tableOf: @escaping (ObjectIdentifier) throws -> Int, reading keyPaths: [AnyKeyPath]
    ) throws -> (query: CompiledQuery, positions: [Int]) {
        var columns = QueryColumns(model: Model.self, tableOf: tableOf)
        var predicate: QueryExpression?
        if let descriptor = descriptor.predicate {
            var translation = PredicateTranslation(root: descriptor.variable.key, columns: columns)
            predicate = try translation.translate(descriptor.expression)
            columns = translation.columns
        }
        var sort: [SortTerm] = []
        for descriptor in descriptor.sortBy {
            guard let keyPath = descriptor.keyPath, let column = try columns.position(of: keyPath) else {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "a sort descriptor of \(Model.self) names neither a stored column nor a column of a to-one relationship's target (\\.list?.title); sort by key paths to stored properties"
                )
            }
            var term = SortTerm(column: column, ascending: descriptor.order == .forward)
            if let comparator = descriptor.stringComparator {
                term.textOrder = try TextOrder(comparator, sorting: columns.propertyPath(at: column))
            }
            sort.append(term)
        }
        let schema = Model._$schema
        sort.append(SortTerm(column: schema.primaryKeyIndex, ascending: true))
        try Self.checkWindow(offset: descriptor.fetchOffset ?? 0, limit: descriptor.fetchLimit)
        let positions = try keyPaths.map { keyPath in
            guard let position = try columns.position(of: keyPath) else {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "\(keyPath) names neither a stored column of \(Model.self) nor a column of a to-one relationship's target (\\.list?.title); name a stored property"
                )
            }
            return position
        }
        let read = (predicate?.columns ?? []).union(sort.map(\.column)).union(positions)
        let (own, joins) = columns.split(read)
        let query = CompiledQuery(
            table: table, schema: schema, predicate: predicate, sort: sort, columnsRead: own, joins: joins,
            limit: descriptor.fetchLimit, offset: descriptor.fetchOffset ?? 0
        )
        return (query, positions)
    }

    /// Throws for a window that shows no rows of any list: a negative offset or limit.
    static func checkWindow(offset: Int, limit: Int?) throws {
        if let limit, limit < 0 {
            throw StoreError(code: .unsupportedPredicate, message: "fetchLimit is \(limit); use 0 or more, or nil for no limit")
        }
        if offset < 0 {
            throw StoreError(code: .unsupportedPredicate, message: "fetchOffset is \(offset); use 0 or more")
        }
    }

    /// The same table and joins, for the rows whose relationship `join` points at one of `keys`,
    /// in key order: what a change of those targets can change.
    func rowsPointing(atAnyOf keys: [SQLValue], through join: Join) -> CompiledQuery {
        CompiledQuery(
            table: table, schema: schema, predicate: .isIn(.column(join.column), keys),
            sort: [SortTerm(column: schema.primaryKeyIndex, ascending: true)], columnsRead: [join.column], joins: joins,
            limit: nil, offset: 0
        )
    }

    /// Whether a row's values (a row of the query) match the predicate. A row whose key the
    /// database has yet to assign holds its key's placeholder as its identity (and sorts by it,
    /// after every key, in the order of the inserts); the predicate sees its key as its object
    /// shows it, NULL.
    func matches(_ row: [SQLValue]) -> Bool {
        guard let predicate else { return true }
        guard case .blob = row[schema.primaryKeyIndex], KeyPlaceholder.request(in: row[schema.primaryKeyIndex]) != nil else { return predicate.matches(row) }
        var shown = row
        shown[schema.primaryKeyIndex] = .null
        return predicate.matches(shown)
    }

    /// How a row sorts.
    func entry(of row: [SQLValue]) -> SortedRows.Entry {
        SortedRows.Entry(
            head: row[sort[0].column],
            middle: sort.count > 2 ? sort[1..<(sort.count - 1)].map { row[$0.column] } : [],
            key: row[schema.primaryKeyIndex]
        )
    }

    /// The order of the entries of rows (``entry(of:)``), the one the engine's SQL sorts them in.
    var entryOrder: SortedRows.Order {
        SortedRows.Order(terms: sort.map { SortedRows.Order.Term(ascending: $0.ascending, textOrder: $0.textOrder) })
    }

    /// The join and the target's column at a position of the query's row; nil for a column of
    /// the table itself.
    func joined(at position: Int) -> (join: Int, column: Int)? {
        guard position >= schema.columns.count else { return nil }
        let join = joins.lastIndex { $0.offset <= position }!
        return (join, position - joins[join].offset)
    }

    /// The schema of the column at a position of the query's row.
    func column(at position: Int) -> ColumnSchema {
        guard let (join, column) = joined(at: position) else { return schema.columns[position] }
        return joins[join].target.columns[column]
    }
}

/// How a sort compares text: by Unicode scalar values (SQLite's `BINARY`, PostgreSQL's
/// `COLLATE "C"`), or, on Apple platforms, as Foundation's `localizedStandard` comparator does
/// (the default of `SortDescriptor` for strings there). An engine sorts by the very same
/// comparison (SQLite through a collation it registers), or refuses the order. Elsewhere
/// Foundation has `.lexical` alone, so text sorts one way.
enum TextOrder: Hashable, Sendable {
    case binary
    #if canImport(Darwin)
    case localizedStandard
    #endif

    /// The order of a sort descriptor's string comparator, whichever its direction.
    ///
    /// - Throws: ``StoreError/Code/unsupportedPredicate`` for a comparator with no
    ///   translation (`.localized`), naming `property`.
    init(_ comparator: String.StandardComparator, sorting property: String) throws {
        #if canImport(Darwin)
        var forward = comparator
        forward.order = .forward
        if forward == .localizedStandard {
            self = .localizedStandard
            return
        }
        guard forward == .lexical else {
            throw StoreError(
                code: .unsupportedPredicate,
                message: "sorting by \(property) with the string comparator \(comparator) has no translation; use SortDescriptor(\\.\(property), comparator: .lexical) (by Unicode scalars), or .localizedStandard (as the Finder sorts)"
            )
        }
        #endif
        self = .binary
    }

    /// Compares two values; only text compares differently from ``SQLValue/compare(_:_:)``.
    func compare(_ a: SQLValue, _ b: SQLValue) -> ComparisonResult {
        #if canImport(Darwin)
        if self == .localizedStandard, case .text(let x) = a, case .text(let y) = b { return Self.compareLocalizedStandard(x, y) }
        #endif
        return SQLValue.compare(a, b)
    }

    #if canImport(Darwin)
    /// The comparison behind ``localizedStandard``, shared by the evaluator and the engines.
    static func compareLocalizedStandard(_ a: String, _ b: String) -> ComparisonResult {
        a.localizedStandardCompare(b)
    }
    #endif
}
