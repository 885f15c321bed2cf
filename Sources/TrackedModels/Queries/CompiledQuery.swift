import Foundation

/// A ``FetchDescriptor`` compiled once for one table into two forms that agree: a predicate
/// tree and an order that an engine writes as SQL in its dialect, and the same tree and order
/// evaluated in memory over a row's values (``matches(_:)``, ``precedes(_:_:)``), which live
/// results use instead of asking the database about each changed row.
struct CompiledQuery {
    /// One sort term: a column, its direction, and how its text compares.
    struct SortTerm: Hashable {
        var column: Int
        var ascending: Bool
        var textOrder: TextOrder = .binary
    }

    let table: Int
    let schema: TableSchema
    /// The predicate, or nil for every row.
    let predicate: QueryExpression?
    /// The order: the descriptors' columns, then the primary key.
    let sort: [SortTerm]
    /// Every column the predicate or the order reads: a change to any other column cannot
    /// change the result.
    let columnsRead: Set<Int>
    let limit: Int?
    let offset: Int
}

extension CompiledQuery {
    /// Compiles a descriptor for a model's table; throws what has no translation.
    init<Model: TrackedModel>(_ descriptor: FetchDescriptor<Model>, table: Int) throws {
        self.table = table
        schema = Model._$schema
        if let predicate = descriptor.predicate {
            var translation = PredicateTranslation(root: predicate.variable.key) { Model._$columnIndex(of: $0) }
            self.predicate = try translation.translate(predicate.expression)
        } else {
            predicate = nil
        }
        var columnsRead = predicate?.columns ?? []
        var sort: [SortTerm] = []
        for descriptor in descriptor.sortBy {
            guard let keyPath = descriptor.keyPath, let column = Model._$columnIndex(of: keyPath) else {
                throw StoreError(
                    code: .unsupportedPredicate,
                    message: "a sort descriptor of \(Model.self) does not name a stored column; sort by key paths to stored properties"
                )
            }
            var term = SortTerm(column: column, ascending: descriptor.order == .forward)
            if let comparator = descriptor.stringComparator {
                guard let order = TextOrder(comparator) else {
                    throw StoreError(
                        code: .unsupportedPredicate,
                        message: "sorting \(schema.name).\(schema.columns[column].name) with the string comparator \(comparator) has no translation; use SortDescriptor(\\.\(schema.columns[column].property), comparator: .lexical) (by Unicode scalars), or, on Apple platforms, .localizedStandard (as the Finder sorts)"
                    )
                }
                term.textOrder = order
            }
            sort.append(term)
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

    /// Whether a row's values (in model column order) match the predicate.
    func matches(_ row: [SQLValue]) -> Bool {
        predicate?.matches(row) ?? true
    }

    /// How a row sorts.
    func entry(of row: [SQLValue]) -> SortedRows.Entry {
        SortedRows.Entry(
            head: row[sort[0].column],
            middle: sort.count > 2 ? sort[1..<(sort.count - 1)].map { row[$0.column] } : [],
            key: row[schema.primaryKeyIndex]
        )
    }

    /// Whether `a` comes before `b`, in the order the engine's SQL sorts them.
    func precedes(_ a: SortedRows.Entry, _ b: SortedRows.Entry) -> Bool {
        var order = sort[0].textOrder.compare(a.head, b.head)
        if order != .orderedSame { return (order == .orderedAscending) == sort[0].ascending }
        for index in a.middle.indices {
            order = sort[index + 1].textOrder.compare(a.middle[index], b.middle[index])
            if order != .orderedSame { return (order == .orderedAscending) == sort[index + 1].ascending }
        }
        return SQLValue.compare(a.key, b.key) == .orderedAscending
    }
}

/// How a sort compares text: by Unicode scalar values (SQLite's `BINARY`, PostgreSQL's
/// `COLLATE "C"`), or as Foundation's `localizedStandard` comparator does, the default of
/// `SortDescriptor` for strings on Apple platforms. An engine sorts by the very same
/// comparison (SQLite through a collation it registers), or refuses the order.
enum TextOrder: Hashable, Sendable {
    case binary
    case localizedStandard

    /// The order of a sort descriptor's string comparator, whichever its direction; nil for
    /// any other comparator. (Only Apple platforms' Foundation has `.localizedStandard`, the
    /// default there; elsewhere every comparator is `.lexical`.)
    init?(_ comparator: String.StandardComparator) {
        var forward = comparator
        forward.order = .forward
        if forward == .lexical {
            self = .binary
            return
        }
        #if canImport(Darwin)
        if forward == .localizedStandard {
            self = .localizedStandard
            return
        }
        #endif
        return nil
    }

    /// Compares two values; only text compares differently from ``SQLValue/compare(_:_:)``.
    func compare(_ a: SQLValue, _ b: SQLValue) -> ComparisonResult {
        guard self == .localizedStandard, case .text(let x) = a, case .text(let y) = b else { return SQLValue.compare(a, b) }
        return Self.compareLocalizedStandard(x, y)
    }

    /// The comparison behind ``localizedStandard``, shared by the evaluator and the engines.
    static func compareLocalizedStandard(_ a: String, _ b: String) -> ComparisonResult {
        a.localizedStandardCompare(b)
    }
}
