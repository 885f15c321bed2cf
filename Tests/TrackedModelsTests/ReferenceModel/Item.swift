import Foundation
import PropertyBased
import TrackedModels

/// The model the reference-model test drives: one column of each kind of value, a key that the
/// program supplies or SQLite assigns, and a to-one relationship to another item.
@Tracked(table: "items")
final class Item {
    @PrimaryKey var id: Int64?
    var title: String
    var count: Int
    var note: String?
    var score: Double
    var payload: Data?
    var flag: Bool
    @Column("link_id") var link: Item?
    /// The items that link to this one; deleting it points them at nothing (nullify).
    @Relationship(inverse: \Item.link) var linkedFrom: [Item] = []

    /// The columns in schema order, as the reference names them.
    enum Column: Int, CaseIterable, CustomStringConvertible {
        case id, title, count, note, score, payload, flag, link

        var description: String { "\(Item._$schema.columns[rawValue].name)" }
        /// The columns a program assigns (all but the key).
        static let assignable: [Column] = [.title, .count, .note, .score, .payload, .flag, .link]
    }

    /// Assigns a value through the property's setter, as a program would (a relationship is
    /// assigned an object: `Harness.relate`).
    func assign(_ value: SQLValue, to column: Column) {
        switch column {
        case .id, .link: preconditionFailure("\(column) is not assigned a value")
        case .title: title = try! String(sqlValue: value)
        case .count: count = try! Int(sqlValue: value)
        case .note: note = try! String?(sqlValue: value)
        case .score: score = try! Double(sqlValue: value)
        case .payload: payload = try! Data?(sqlValue: value)
        case .flag: flag = try! Bool(sqlValue: value)
        }
    }
}

extension Item {
    convenience init(key: Int64?, values: [SQLValue]) {
        self.init(
            id: key, title: try! String(sqlValue: values[1]), count: try! Int(sqlValue: values[2]),
            note: try! String?(sqlValue: values[3]), score: try! Double(sqlValue: values[4]),
            payload: try! Data?(sqlValue: values[5]), flag: try! Bool(sqlValue: values[6])
        )
    }
}

/// A `CREATE TABLE` for ``Item`` among the declarations SQLite allows for its Swift types: type
/// names, key declarations, collations, defaults and constraints.
struct TableDeclaration: CustomStringConvertible {
    enum Key: CaseIterable {
        /// `"id" INTEGER PRIMARY KEY`: the rowid.
        case integerPrimaryKey
        case autoincrement
        case notNullIntegerPrimaryKey
        /// `PRIMARY KEY ("id")` as a table constraint on an INTEGER column: the rowid too.
        case tableConstraint
        /// `"id" INT PRIMARY KEY`: an ordinary column that may even hold NULL, not the rowid.
        case intPrimaryKey
        /// `"id" INTEGER PRIMARY KEY DESC`: SQLite's quirk, not the rowid.
        case descending
        /// A table `WITHOUT ROWID`.
        case withoutRowID
    }

    /// The seed the declaration came from; it also chooses the program's live queries.
    var seed: UInt64 = 0
    var key: Key
    var titleType: String
    var titleCollation: String?
    var countType: String
    /// `CHECK ("count" <> 13)`: a constraint the generated programs can violate.
    var hasCountCheck: Bool
    var noteType: String
    /// A NOT NULL that the optional property can violate by assigning nil.
    var noteIsNotNull: Bool
    var noteCollation: String?
    var scoreType: String
    var payloadType: String
    var flagType: String
    var linkType = "INTEGER"
    var hasDefaults: Bool

    /// Whether SQLite assigns the key of a row inserted without one: the key is the rowid.
    var keyIsRowID: Bool {
        switch key {
        case .integerPrimaryKey, .autoincrement, .notNullIntegerPrimaryKey, .tableConstraint: true
        case .intPrimaryKey, .descending, .withoutRowID: false
        }
    }

    var sql: String {
        func collate(_ name: String?) -> String { name.map { " COLLATE \($0)" } ?? "" }
        func defaulting(_ literal: String) -> String { hasDefaults ? " DEFAULT \(literal)" : "" }
        var columns: [String] = []
        switch key {
        case .integerPrimaryKey, .withoutRowID: columns.append("\"id\" INTEGER PRIMARY KEY")
        case .autoincrement: columns.append("\"id\" INTEGER PRIMARY KEY AUTOINCREMENT")
        case .notNullIntegerPrimaryKey: columns.append("\"id\" INTEGER NOT NULL PRIMARY KEY")
        case .tableConstraint: columns.append("\"id\" INTEGER")
        case .intPrimaryKey: columns.append("\"id\" INT PRIMARY KEY")
        case .descending: columns.append("\"id\" INTEGER PRIMARY KEY DESC")
        }
        columns.append("\"title\" \(titleType) NOT NULL\(collate(titleCollation))\(defaulting("'untitled'"))")
        columns.append("\"count\" \(countType) NOT NULL\(defaulting("0"))\(hasCountCheck ? " CHECK (\"count\" <> 13)" : "")")
        columns.append("\"note\" \(noteType)\(noteIsNotNull ? " NOT NULL" : "")\(collate(noteCollation))")
        columns.append("\"score\" \(scoreType) NOT NULL\(defaulting("0.5"))")
        columns.append("\"payload\" \(payloadType)")
        columns.append("\"flag\" \(flagType) NOT NULL\(defaulting("0"))")
        columns.append("\"link_id\" \(linkType)")
        if key == .tableConstraint { columns.append("PRIMARY KEY (\"id\")") }
        return "CREATE TABLE \"items\" (\(columns.joined(separator: ", ")))\(key == .withoutRowID ? " WITHOUT ROWID" : "")"
    }

    var description: String { sql }

    /// The plain declaration the model's own `createTableSQL` would make, with the constraints.
    static let plain = TableDeclaration(
        key: .integerPrimaryKey, titleType: "TEXT", titleCollation: nil, countType: "INTEGER", hasCountCheck: true,
        noteType: "TEXT", noteIsNotNull: false, noteCollation: nil, scoreType: "REAL", payloadType: "BLOB",
        flagType: "INTEGER", hasDefaults: false
    )

    /// A declaration chosen by a seed; seed 0 is ``plain``.
    init(seed: UInt64) {
        guard seed != 0 else {
            self = .plain
            return
        }
        self.seed = seed
        var random = Xoshiro(seed: seed)
        // The rowid keys come up most often: the others must be refused at open.
        key = random.chance(4, in: 5) ? [.integerPrimaryKey, .autoincrement, .notNullIntegerPrimaryKey, .tableConstraint].randomElement(using: &random)!
            : [.intPrimaryKey, .descending, .withoutRowID].randomElement(using: &random)!
        titleType = ["TEXT", "VARCHAR(20)", "CLOB", "CHARACTER(5)", "NVARCHAR(10)", "TEXT"].randomElement(using: &random)!
        titleCollation = [nil, "BINARY", "NOCASE", "RTRIM"].randomElement(using: &random)!
        countType = ["INTEGER", "INT", "BIGINT", "UNSIGNED BIG INT", "NUMERIC"].randomElement(using: &random)!
        hasCountCheck = random.chance(1, in: 2)
        noteType = ["TEXT", "VARCHAR(3)", "TEXT"].randomElement(using: &random)!
        noteIsNotNull = random.chance(1, in: 4)
        noteCollation = [nil, "NOCASE", "RTRIM"].randomElement(using: &random)!
        scoreType = ["REAL", "DOUBLE", "DOUBLE PRECISION", "FLOAT", "NUMERIC", "DECIMAL(10,5)"].randomElement(using: &random)!
        payloadType = ["BLOB", ""].randomElement(using: &random)!
        flagType = ["INTEGER", "BOOLEAN", "INT"].randomElement(using: &random)!
        hasDefaults = random.chance(1, in: 2)
        linkType = ["INTEGER", "INT", "BIGINT"].randomElement(using: &random)!
    }

    init(
        key: Key, titleType: String, titleCollation: String?, countType: String, hasCountCheck: Bool, noteType: String,
        noteIsNotNull: Bool, noteCollation: String?, scoreType: String, payloadType: String, flagType: String, hasDefaults: Bool
    ) {
        self.key = key
        self.titleType = titleType
        self.titleCollation = titleCollation
        self.countType = countType
        self.hasCountCheck = hasCountCheck
        self.noteType = noteType
        self.noteIsNotNull = noteIsNotNull
        self.noteCollation = noteCollation
        self.scoreType = scoreType
        self.payloadType = payloadType
        self.flagType = flagType
        self.hasDefaults = hasDefaults
    }
}

extension Xoshiro {
    /// The generator one generated number decodes with: the same values every time. Its state
    /// is the number spread over all 64 bits four ways (SplitMix64's finalizer): nearby numbers
    /// would otherwise start from nearly the same state and decode alike.
    init(seed: UInt64) {
        func spread(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        self.init(seed: (spread(seed), spread(seed &+ 1), spread(seed &+ 2), spread(seed &+ 3)))
    }
}

extension RandomNumberGenerator {
    mutating func chance(_ numerator: UInt64, in denominator: UInt64) -> Bool {
        next(upperBound: denominator) < numerator
    }
}
