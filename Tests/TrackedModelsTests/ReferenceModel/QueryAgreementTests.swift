import Foundation
import PropertyBased
import Testing
@testable import TrackedModels

/// The two forms of a compiled query agree: generated predicates (of the shapes `#Predicate`
/// translates to, over every column type and the edge values of each) and generated orders,
/// run as SQLite's SQL on a table and by the in-memory evaluator over the same rows, must
/// select the same rows in the same order, and every predicate must have the same value for
/// every row.
///
/// A failure prints the seeds, the expression, its SQL, and the first row where they differ.
@Suite struct QueryAgreementTests {
    static let cases = ProcessInfo.processInfo.environment["TRACKEDMODELS_REFERENCE_PROGRAMS"].flatMap(Int.init).map { $0 * 4 } ?? 600

    @Test func sqlAndTheEvaluatorAgreeOnGeneratedQueries() async throws {
        await propertyCheck(count: Self.cases, input: zip(Gen.uint64(in: 0...(1 << 40)), Gen.uint64(in: 0...(1 << 40)))) { querySeed, rowSeed in
            try Self.check(querySeed: querySeed, rowSeed: rowSeed)
        }
    }

    /// Found by the generator (arithmetic with text, which a column of another affinity can
    /// hold): SQLite's `%` takes text by the whole number it begins with, not by the real it
    /// spells, on either side.
    @Test func aRemainderTakesTextByItsWholeNumberPrefix() {
        let cases: [(SQLValue, SQLValue, SQLValue)] = [
            (.text(" -3.5e2x"), .real(-16.09375), .real(-3)),   // SQLite: -3.0, not -350 % -16
            (.real(45.25), .text("2E-2z"), .real(1)),           // SQLite: 1.0, not NULL (0.02 as 0)
            (.text("12abc"), .integer(5), .integer(2)),
            (.blob(Data("-9223372036854775809".utf8)), .integer(7), .real(-1)),
        ]
        for (left, right, expected) in cases {
            let value = QueryExpression.arithmetic(.remainder, .value(left), .value(right)).evaluate([])
            #expect(value == expected, "\(left) % \(right) is \(value); SQLite says \(expected)")
        }
    }

    static func check(querySeed: UInt64, rowSeed: UInt64) throws {
        let schema = Item._$schema
        let rows = generatedRows(seed: rowSeed)
        let connection = try Connection(filename: Connection.inMemoryFilename(), mode: .readWriteCreate, busyTimeout: .seconds(1))
        try connection.execute(schema.createTableSQL)
        let insert = try connection.makeStatement("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        for row in rows { try insert.run(row) }

        var generator = ExpressionGenerator(seed: querySeed, rows: rows, linked: true, mixesKinds: true)
        let predicate = generator.boolean(depth: 3)
        let query = ExpressionGenerator.query(predicate: predicate, sort: generator.sort())
        // Each row as the query reads it: its columns, then those of the row it links to.
        let byKey = Dictionary(uniqueKeysWithValues: rows.map { ($0[0], $0) })
        let queryRows = rows.map { row in
            row + (byKey[row[Item.Column.link.rawValue]] ?? Array(repeating: .null, count: schema.columns.count))
        }
        let condition = SQLiteDialect.condition(query)
        let context = "seeds (\(querySeed), \(rowSeed)); expression \(predicate); SQL \(condition.sql) with \(condition.arguments)"

        // The value of the predicate, row by row.
        let values = try connection.makeStatement("SELECT \(condition.sql) FROM \(condition.from) ORDER BY items.id").rows(condition.arguments)
        for (row, value) in zip(queryRows, values) {
            let evaluated = predicate.evaluate(row)
            #expect(Self.same(evaluated, value[0]), "the evaluator says \(evaluated), SQLite \(value[0]), for row \(row); \(context)")
        }
        // The rows selected, in order.
        let select = SQLiteDialect.select(query, limit: nil)
        let selected = try connection.makeStatement(select.sql).rows(select.arguments).map { $0[0] }
        let evaluated = queryRows.filter(query.matches)
            .map(query.entry(of:))
            .sorted(by: query.entryOrder.precedes)
            .map(\.key)
        #expect(evaluated == selected, "the evaluator selects \(evaluated), SQLite \(selected); order \(query.sort); \(context)")
    }

    /// Up to 20 generated items, keyed from -3, each linking to another, to no row (a key with
    /// none), or to nothing.
    static func generatedRows(seed: UInt64) -> [[SQLValue]] {
        var random = Xoshiro(seed: seed)
        let count = Int(random.next() % 20)
        return (0..<count).map { index in
            var row = Values.row(seed: random.chance(1, in: 8) ? 0 : random.next() % 1_000_000)
            row[0] = .integer(Int64(index) - 3)
            switch random.next() % 4 {
            case 0: row[Item.Column.link.rawValue] = .null
            case 1: row[Item.Column.link.rawValue] = .integer(1_000)
            default: row[Item.Column.link.rawValue] = .integer(Int64(random.next() % UInt64(max(count, 1))) - 3)
            }
            return row
        }
    }

    /// SQL's result and the evaluator's are the same value: integers and reals by value (SQLite
    /// returns a whole REAL it computed as such), text by its scalars.
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): x == y || (x.isNaN && y.isNaN)
        default: a == b
        }
    }
}

/// Generates a predicate tree of the shapes `#Predicate` translates to, typed as Swift types
/// them: comparisons of like with like, Bool-valued logic, arithmetic on integers and reals,
/// text search, optionals with `??` and `flatMap`, and membership in literal arrays. Literal
/// values are edge values, or values taken from the rows so that comparisons meet equality.
struct ExpressionGenerator {
    private var random: Xoshiro
    private let rows: [[SQLValue]]
    /// Whether columns may be read through `link` (`$0.link?.title`): positions past the
    /// table's columns, those of the linked row.
    private let linked: Bool
    /// Whether arithmetic may take text and bytes, as a column of another affinity can hold
    /// them (a row another program wrote): SQLite computes with the number their text starts
    /// with, or 0, where PostgreSQL refuses the query.
    private let mixesKinds: Bool

    init(seed: UInt64, rows: [[SQLValue]], linked: Bool = false, mixesKinds: Bool = false) {
        random = Xoshiro(seed: seed)
        self.rows = rows
        self.linked = linked
        self.mixesKinds = mixesKinds
    }

    /// Text that spells a number SQLite reads, in part, or not at all.
    private static let numericTexts = [
        "12", " -3.5e2x", "+.5", "abc", "1e", "1e+", "2E-2z", "9223372036854775808", "-9223372036854775809", "0x1A", "\t7", "-", ".", "5.", "  +", "1.5e400", "007",
    ]

    /// A column of the row, or, a third of the time when linked, of the row it links to.
    private mutating func column(_ column: Item.Column) -> QueryExpression {
        .column(column.rawValue + (linked && random.chance(1, in: 3) ? Item._$schema.columns.count : 0))
    }

    /// A compiled query of items over a predicate and an order, joined through `link` when
    /// they read past the table's columns.
    static func query(predicate: QueryExpression, sort: [CompiledQuery.SortTerm]) -> CompiledQuery {
        let schema = Item._$schema
        let positions = predicate.columns.union(sort.map(\.column))
        var joins: [CompiledQuery.Join] = []
        var own = positions.filter { $0 < schema.columns.count }
        let linkedColumns = Set(positions.filter { $0 >= schema.columns.count }.map { $0 - schema.columns.count })
        if !linkedColumns.isEmpty {
            own.insert(Item.Column.link.rawValue)
            joins = [CompiledQuery.Join(
                column: Item.Column.link.rawValue, targetTable: 0, target: schema, offset: schema.columns.count, columnsRead: linkedColumns
            )]
        }
        return CompiledQuery(table: 0, schema: schema, predicate: predicate, sort: sort, columnsRead: own, joins: joins, limit: nil, offset: 0)
    }

    private enum Kind { case integer, real, text, optionalText, blob }

    private static let column: [Kind: Item.Column] = [.integer: .count, .real: .score, .text: .title, .optionalText: .note, .blob: .payload]

    mutating func boolean(depth: Int) -> QueryExpression {
        let choice = depth <= 0 ? random.next() % 4 : random.next() % 14
        switch choice {
        case 0: return column(.flag)
        case 1: return comparison(.integer, depth: depth)
        case 2: return comparison(.real, depth: depth)
        case 3: return comparison(.text, depth: depth)
        case 4: return .and(boolean(depth: depth - 1), boolean(depth: depth - 1))
        case 5: return .or(boolean(depth: depth - 1), boolean(depth: depth - 1))
        case 6: return .not(boolean(depth: depth - 1))
        case 7:
            let equal: QueryExpression.Comparison = random.chance(1, in: 2) ? .equal : .notEqual
            let kind: Kind = random.chance(1, in: 2) ? .optionalText : .blob
            return .compare(equal, column(Self.column[kind]!), random.chance(1, in: 3) ? .value(.null) : literal(kind))
        case 8, 12, 13:
            let text = expression(.text, depth: depth - 1)
            let part = expression(.text, depth: depth - 1)
            return random.chance(1, in: 2) ? .contains(text, part) : .startsWith(text, part)
        case 9:
            let kind: Kind = random.chance(1, in: 2) ? .integer : .text
            let values = (0..<Int(random.next() % 4)).map { _ in literalValue(kind) }
            let element = expression(kind, depth: depth - 1)
            let membership = QueryExpression.isIn(element, values)
            return random.chance(1, in: 4) ? .or(.compare(.equal, column(.note), .value(.null)), membership) : membership
        case 10:
            // `$0.note.flatMap { $0 < "m" } ?? false`
            let note = column(.note)
            let test = QueryExpression.compare(.less, note, literal(.text))
            return .coalesce(.conditional(.compare(.equal, note, .value(.null)), .value(.null), test), .value(.integer(Int64(random.next() % 2))))
        default:
            return .conditional(boolean(depth: depth - 1), boolean(depth: depth - 1), boolean(depth: depth - 1))
        }
    }

    private mutating func comparison(_ kind: Kind, depth: Int) -> QueryExpression {
        let operators: [QueryExpression.Comparison] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]
        return .compare(operators[Int(random.next() % 6)], expression(kind, depth: depth - 1), expression(kind, depth: depth - 1))
    }

    private mutating func expression(_ kind: Kind, depth: Int) -> QueryExpression {
        let choice = depth <= 0 ? random.next() % 2 : random.next() % 6
        switch (kind, choice) {
        // `$0.note!` translates to the column itself: text that may be NULL.
        case (.text, 0): return column(random.chance(1, in: 3) ? .note : .title)
        case (_, 0): return column(Self.column[kind]!)
        case (_, 1): return literal(kind)
        case (.integer, 2), (.real, 2):
            let operations: [QueryExpression.Arithmetic] = kind == .integer ? [.add, .subtract, .multiply, .divide, .remainder] : [.add, .subtract, .multiply, .realDivide]
            return .arithmetic(operations[Int(random.next() % UInt64(operations.count))], expression(kind, depth: depth - 1), expression(kind, depth: depth - 1))
        case (.integer, 3), (.real, 3): return .negate(expression(kind, depth: depth - 1))
        case (.integer, 5) where mixesKinds, (.real, 5) where mixesKinds:
            // A number computed with text or bytes.
            let operations: [QueryExpression.Arithmetic] = [.add, .subtract, .multiply, .divide, .remainder, .realDivide]
            let other: QueryExpression = switch random.next() % 4 {
            case 0: column(.title)
            case 1: column(.payload)
            case 2: .value(.blob(Data(Self.numericTexts[Int(random.next() % UInt64(Self.numericTexts.count))].utf8)))
            default: .value(.text(Self.numericTexts[Int(random.next() % UInt64(Self.numericTexts.count))]))
            }
            let number = expression(kind, depth: depth - 1)
            let operation = operations[Int(random.next() % UInt64(operations.count))]
            return random.chance(1, in: 2) ? .arithmetic(operation, other, number) : .arithmetic(operation, number, other)
        case (.text, 2): return .coalesce(column(.note), expression(.text, depth: depth - 1))
        case (_, 4): return .conditional(boolean(depth: depth - 1), expression(kind, depth: depth - 1), expression(kind, depth: depth - 1))
        default: return random.chance(1, in: 2) ? column(Self.column[kind]!) : literal(kind)
        }
    }

    private mutating func literal(_ kind: Kind) -> QueryExpression {
        .value(literalValue(kind))
    }

    /// A value of the kind: often one a row holds (or part of one), else an edge value. A NaN
    /// literal is NULL, as the translation binds it.
    private mutating func literalValue(_ kind: Kind) -> SQLValue {
        let column = Self.column[kind]!
        if !rows.isEmpty, random.chance(1, in: 2) {
            let value = rows[Int(random.next() % UInt64(rows.count))][column.rawValue]
            if case .text(let text) = value, random.chance(1, in: 2) {
                let scalars = Array(text.unicodeScalars)
                let start = scalars.isEmpty ? 0 : Int(random.next() % UInt64(scalars.count))
                let end = start + (scalars.count == start ? 0 : Int(random.next() % UInt64(scalars.count - start + 1)))
                var part = String.UnicodeScalarView()
                part.append(contentsOf: scalars[start..<end])
                return .text(String(part))
            }
            if value != .null { return value.nanAsNull }
        }
        let value = Values.value(for: kind == .optionalText ? .title : column, seed: random.next() % 1_000_000)
        return value.nanAsNull
    }

    /// Up to three sort terms over the sortable columns, then the key.
    mutating func sort() -> [CompiledQuery.SortTerm] {
        let sortable: [Item.Column] = [.title, .count, .note, .score, .payload, .flag]
        var terms = (0..<Int(random.next() % 4)).map { _ in
            guard case .column(let position) = column(sortable[Int(random.next() % 6)]) else { preconditionFailure("a column") }
            return CompiledQuery.SortTerm(column: position, ascending: random.chance(1, in: 2))
        }
        terms.append(CompiledQuery.SortTerm(column: Item.Column.id.rawValue, ascending: true))
        return terms
    }
}
