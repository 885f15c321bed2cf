import Foundation
import TrackedModels

/// What the file must hold and what each object must show, kept the plainest way: the committed
/// rows in a dictionary and the changes not yet committed as an ordered list of atomic units.
/// It shares no code with the store; it states the store's contracts as rules.
///
/// - A unit commits whole or not at all. Outside a transaction, a row's changes coalesce into
///   the row's open unit (the last unit that touches the row, if it is a one-row change and not
///   refused); an insert or delete starts a new one. A transaction is one unit.
/// - A unit the database refuses stays pending, marked; units that touch its rows wait behind
///   it. A write to a cell whose last writer is a refused unit goes into that unit (it replaces
///   the refused value), and every flush tries refused units again.
/// - An object shows the committed row with every pending unit applied in order.
/// - When another connection deletes a row (or changes its key, or deletes and inserts it
///   again), the program's updates and deletes of it that come before its own insert of that
///   row are dropped: a later row of that key is another row. A refused unit's are set aside:
///   it stays, refused for good, for the program to discard. A unit refused because its row is
///   gone is never tried again. Discarding an insert drops the later updates and deletes of its
///   row.
struct Reference {
    enum RowID: Hashable, CustomStringConvertible {
        case key(Int64)
        /// An insert whose key SQLite assigns; numbered in program order.
        case new(Int)

        var description: String {
            switch self {
            case .key(let key): "\(key)"
            case .new(let number): "new#\(number)"
            }
        }
    }

    enum Write: CustomStringConvertible {
        case set(SQLValue)
        case add(Int64)

        var description: String {
            switch self {
            case .set(let value): "= \(value.describedExactly)"
            case .add(let delta): "+= \(delta)"
            }
        }
    }

    enum Operation {
        case insert(RowID, [SQLValue])
        case update(RowID, [Int: Write])
        case delete(RowID)
        case deleteAll

        var row: RowID? {
            switch self {
            case .insert(let row, _), .update(let row, _), .delete(let row): row
            case .deleteAll: nil
            }
        }

        func touches(_ row: RowID) -> Bool {
            if case .deleteAll = self { return true }
            return self.row == row
        }

        func writes(_ row: RowID, column: Int) -> Bool {
            switch self {
            case .insert(let id, _): id == row
            case .update(let id, let cells): id == row && cells[column] != nil
            case .delete, .deleteAll: false
            }
        }
    }

    struct Unit {
        var operations: [Operation]
        var isTransaction: Bool
        var isRefused = false
        /// Why the database refused it, when it did.
        var refusal: String?
        /// Refused because a row it updates is gone: no flush tries it again (a row of that key
        /// made later would be another row); it waits to be discarded.
        var isRefusedForGood = false
        /// How many of its changes were set aside: they changed rows that went away while it was
        /// refused. It stays while it has any, for the program to discard.
        var setAside = 0

        /// Marks the unit refused by `refusal`. (One that found its row gone keeps the row's
        /// changes until the store hears the row went, and sets them aside then.)
        mutating func refuse(_ refusal: String) {
            isRefused = true
            self.refusal = refusal
            isRefusedForGood = refusal.hasSuffix(Reference.gone)
        }

        /// Sets aside a refused unit's updates and deletes of a row that went away (those
        /// before its own insert of the row): a row of that key made later is another row, and
        /// trying the unit again cannot help.
        mutating func setAsideChanges(of key: Int64) {
            let end = operations.firstIndex { if case .insert(.key(key), _) = $0 { true } else { false } } ?? operations.count
            let before = operations.count
            operations = operations.enumerated().filter { position, operation in
                switch operation {
                case .update(.key(key), _), .delete(.key(key)): position >= end
                default: true
                }
            }.map(\.element)
            guard operations.count < before else { return }
            setAside += before - operations.count
            isRefusedForGood = true
        }

        var isEmpty: Bool { operations.isEmpty && setAside == 0 }

        /// The keys of the rows it updates or deletes.
        var changedKeys: [Int64] {
            operations.compactMap { operation in
                switch operation {
                case .update(.key(let key), _), .delete(.key(let key)): key
                default: nil
                }
            }
        }

        func touches(_ row: RowID) -> Bool { operations.contains { $0.touches(row) } }

        func overlaps(_ other: Unit) -> Bool {
            for operation in operations {
                if case .deleteAll = operation, !other.operations.isEmpty { return true }
                if let row = operation.row, other.touches(row) { return true }
            }
            return false
        }
    }

    /// What a link holds while it points at a row whose key the database has yet to assign:
    /// the row's key once that row commits (in the same commit or an earlier one), NULL if it
    /// never does (its insert was discarded). Objects and subscribers see NULL until then.
    static func keyOfNew(_ number: Int) -> SQLValue {
        .blob(Data("new#\(number)".utf8))
    }

    /// The new row a link value points at, if it is ``keyOfNew(_:)``.
    static func newRow(linkedBy value: SQLValue) -> Int? {
        guard case .blob(let data) = value, let text = String(data: data, encoding: .utf8), text.hasPrefix("new#") else { return nil }
        return Int(text.dropFirst(4))
    }

    let declaration: TableDeclaration
    /// The rows the file holds, by key.
    private(set) var file: [Int64: [SQLValue]] = [:]
    /// The largest key an insert ever named, as SQLite's AUTOINCREMENT counter keeps it (it never
    /// gives a key at or below it): a row's, or one an upsert updated or an insert skipped.
    private var largestKeyEver: Int64?
    private(set) var units: [Unit] = []
    /// How many of the first units are in flight (a flush took them and has yet to finish):
    /// no write merges into them.
    private var unitsInFlight = 0
    /// The open transaction's unit while a transaction runs, and a copy per nested level.
    private var transaction: Unit?
    private var lastNew = 0

    init(declaration: TableDeclaration) {
        self.declaration = declaration
    }

    var hasRefusedUnits: Bool { units.contains { $0.isRefused } }
    var hasPendingUnits: Bool { !units.isEmpty }

    // MARK: - What objects show

    /// Every unit, the open transaction's included, in commit order.
    private var allUnits: [Unit] {
        transaction.map { units + [$0] } ?? units
    }

    /// What the row shows: the committed row with every pending unit applied; nil when there is
    /// no row (deleted, never inserted). A link to a row whose key is not known yet shows NULL,
    /// unless `keepingLinksToNewRows` (then it is ``keyOfNew(_:)``).
    func shown(_ row: RowID, keepingLinksToNewRows: Bool = false) -> [SQLValue]? {
        var values: [SQLValue]? = if case .key(let key) = row { file[key] } else { nil }
        for unit in allUnits {
            for operation in unit.operations where operation.touches(row) {
                switch operation {
                case .insert(_, let inserted): values = inserted
                case .update(_, let cells):
                    guard var current = values else { continue }
                    for (column, write) in cells { current[column] = Self.apply(write, to: current[column]) }
                    values = current
                case .delete, .deleteAll: values = nil
                }
            }
        }
        if case .key(let key) = row { values?[0] = .integer(key) }
        let link = Item.Column.link.rawValue
        if !keepingLinksToNewRows, let current = values, Self.newRow(linkedBy: current[link]) != nil { values?[link] = .null }
        return values
    }

    /// Whether a unit writes a link to a row that `other` inserts without a key: it cannot
    /// commit without that row (whichever comes first).
    static func references(_ unit: Unit, insertsOf other: Unit) -> Bool {
        let inserted = Set(other.operations.compactMap { if case .insert(.new(let number), _) = $0 { number } else { nil } })
        guard !inserted.isEmpty else { return false }
        let link = Item.Column.link.rawValue
        return unit.operations.contains { operation in
            switch operation {
            case .insert(_, let values): Self.newRow(linkedBy: values[link]).map(inserted.contains) ?? false
            case .update(_, let cells): if case .set(let value)? = cells[link] { Self.newRow(linkedBy: value).map(inserted.contains) ?? false } else { false }
            case .delete, .deleteAll: false
            }
        }
    }

    /// Every keyed row that shows values, by key.
    var shownRows: [Int64: [SQLValue]] {
        var keys = Set(file.keys)
        for unit in allUnits {
            for operation in unit.operations {
                if case .key(let key)? = operation.row { keys.insert(key) }
            }
        }
        var rows: [Int64: [SQLValue]] = [:]
        for key in keys {
            if let values = shown(.key(key)) { rows[key] = values }
        }
        return rows
    }

    /// The rows inserted whose key the database has yet to assign that show values, by number,
    /// their links to rows like them kept (``keyOfNew(_:)``).
    var shownNewRows: [Int: [SQLValue]] {
        var rows: [Int: [SQLValue]] = [:]
        for unit in allUnits {
            for case .insert(.new(let number), _) in unit.operations {
                if let values = shown(.new(number), keepingLinksToNewRows: true) { rows[number] = values }
            }
        }
        return rows
    }

    /// The value a write leaves in a cell (an increment of an integer, wrapping as Int64 does).
    static func apply(_ write: Write, to value: SQLValue) -> SQLValue {
        switch (write, value) {
        case (.set(let new), _): new
        case (.add(let delta), .integer(let old)): .integer(old &+ delta)
        case (.add(let delta), _): .integer(delta)
        }
    }

    // MARK: - The program's changes

    mutating func newRow() -> RowID {
        lastNew += 1
        return .new(lastNew)
    }

    /// The number of the last row ``newRow()`` made.
    var lastNewNumber: Int { lastNew }

    mutating func write(_ write: Write, column: Int, of row: RowID) {
        // An insert that waits for its key takes every write to its object, even from a
        // transaction, while it is pending and no change made while it was in flight wrote the
        // cell after it; else the write is a change of its row like any other (the store makes
        // it by the key's placeholder).
        if case .new = row, let index = units.firstIndex(where: { unit in unit.operations.contains { if case .insert(row, _) = $0 { true } else { false } } }),
           index >= unitsInFlight, !units[(index + 1)...].contains(where: { unit in unit.operations.contains { $0.writes(row, column: column) } }) {
            Self.merge(write, column: column, of: row, into: &units[index])
            return
        }
        if var open = transaction {
            Self.merge(write, column: column, of: row, into: &open)
            transaction = open
            return
        }
        // A refused unit that last wrote this cell takes the write: it replaces the refused value.
        if let index = units.lastIndex(where: { unit in unit.operations.contains { $0.writes(row, column: column) } }), units[index].isRefused,
           index >= unitsInFlight {
            Self.merge(write, column: column, of: row, into: &units[index])
            return
        }
        if let index = units.lastIndex(where: { $0.touches(row) }), index >= unitsInFlight, !units[index].isTransaction, !units[index].isRefused,
           units[index].operations.count == 1, units[index].operations[0].row == row {
            switch units[index].operations[0] {
            case .insert, .update:
                Self.merge(write, column: column, of: row, into: &units[index])
                return
            case .delete, .deleteAll:
                break
            }
        }
        units.append(Unit(operations: [.update(row, [column: write])], isTransaction: false))
    }

    /// Merges a write into a unit's insert or update of the row (the last one), or appends one.
    private static func merge(_ write: Write, column: Int, of row: RowID, into unit: inout Unit) {
        if let index = unit.operations.lastIndex(where: { $0.touches(row) }) {
            switch unit.operations[index] {
            case .insert(let id, var values):
                values[column] = apply(write, to: values[column])
                unit.operations[index] = .insert(id, values)
                return
            case .update(let id, var cells):
                cells[column] = cells[column].map { merged($0, write) } ?? write
                unit.operations[index] = .update(id, cells)
                return
            case .delete, .deleteAll:
                break
            }
        }
        unit.operations.append(.update(row, [column: write]))
    }

    private static func merged(_ first: Write, _ next: Write) -> Write {
        switch (first, next) {
        case (.add(let a), .add(let b)): .add(a &+ b)
        case (.set(let value), .add): .set(apply(next, to: value))
        case (_, .set): next
        }
    }

    mutating func insert(_ row: RowID, values: [SQLValue]) {
        append(.insert(row, values))
    }

    mutating func delete(_ row: RowID) {
        append(.delete(row))
    }

    mutating func deleteAll() {
        append(.deleteAll)
    }

    private mutating func append(_ operation: Operation) {
        if var open = transaction {
            open.operations.append(operation)
            transaction = open
        } else {
            units.append(Unit(operations: [operation], isTransaction: false))
        }
    }

    // MARK: - Transactions

    /// What a failed transaction level goes back to: its unit as it was (none for the
    /// outermost), and the pending units (writes to an insert waiting for its key go there).
    struct Snapshot {
        var unit: Unit?
        var units: [Unit]
    }

    /// Opens a level; returns what ending it unsuccessfully goes back to.
    mutating func beginTransaction() -> Snapshot {
        defer { if transaction == nil { transaction = Unit(operations: [], isTransaction: true) } }
        return Snapshot(unit: transaction, units: units)
    }

    /// Ends a level: a failed one goes back to its snapshot; the outermost becomes a pending
    /// unit if it succeeded and wrote something.
    mutating func endTransaction(succeeded: Bool, restoring snapshot: Snapshot) {
        guard let open = transaction else { return }
        if !succeeded { units = snapshot.units }
        if let unit = snapshot.unit {
            if !succeeded { transaction = unit }
            return
        }
        transaction = nil
        if succeeded, !open.operations.isEmpty { units.append(open) }
    }

    // MARK: - Committing

    /// Why a unit cannot commit onto `rows`, if it cannot; applies it otherwise.
    ///
    /// - Parameter assigned: The keys the database gave new rows in this commit, by number.
    private func commit(
        _ unit: Unit, onto rows: inout [Int64: [SQLValue]], largestKey: inout Int64?, assigned: inout [Int: Int64], keyOf: (Int) -> Int64?, fileKeys: Set<Int64>
    ) -> String? {
        var scratch = rows
        var largest = largestKey
        var given = assigned
        for operation in unit.operations {
            switch operation {
            case .insert(let row, var values):
                // A NaN is refused when it is bound, before the statement runs; AUTOINCREMENT
                // past the largest key is SQLITE_FULL (before any constraint is checked), and
                // then nothing commits.
                if values.contains(where: { if case .real(let real) = $0 { real.isNaN } else { false } }), let refusal = refusal(of: values) {
                    return refusal
                }
                if case .new(let number) = row, keyOf(number) == nil, declaration.key == .autoincrement, nextRowID(rows: scratch, largest: largest) == nil {
                    return Self.full
                }
                if let refusal = refusal(of: values) { return refusal }
                let key: Int64
                switch row {
                case .key(let supplied): key = supplied
                case .new(let number) where declaration.engine == .postgres:
                    // A sequence assigns it: any key no row holds (the store moves the sequence
                    // past the keys it is given; values a rolled-back flush took are skipped).
                    // An object deleted before its key arrived never learns it: any free key.
                    key = keyOf(number) ?? (1...).lazy.first { scratch[$0] == nil && !fileKeys.contains($0) }!
                case .new(let number):
                    // An object deleted before its key arrived never learns it: SQLite's choice,
                    // or, when SQLite picks at random (the largest key is taken), a key the file
                    // holds and the reference does not know, nor a keyed insert claims (any free
                    // key if the row is gone).
                    let claimed = units.flatMap(\.operations).compactMap { if case .insert(.key(let key), _) = $0 { key } else { nil } }
                    let random = fileKeys.subtracting(scratch.keys).subtracting(claimed).min()
                        ?? (Int64.min...).lazy.first { scratch[$0] == nil && !fileKeys.contains($0) }
                    guard let assigned = keyOf(number) ?? nextRowID(rows: scratch, largest: largest) ?? random else { return "no key was assigned to \(row)" }
                    if let expected = nextRowID(rows: scratch, largest: largest), assigned != expected {
                        return "no key was assigned as SQLite does: \(row) got \(assigned), SQLite gives \(expected)"
                    }
                    key = assigned
                }
                if scratch[key] != nil { return "key \(key) exists" }
                if duplicate(of: values, key: key, in: scratch) != nil { return Self.duplicatePayload }
                values[0] = .integer(key)
                scratch[key] = values
                largest = max(largest ?? key, key)
                if case .new(let number) = row { given[number] = key }
            case .update(let row, let cells):
                // A change made while the row's insert was in flight: the key it got, if any.
                let updated: Int64? = switch row {
                case .key(let key): key
                case .new(let number): given[number] ?? keyOf(number)
                }
                guard let key = updated, var values = scratch[key] else { return "row \(row) \(Self.gone)" }
                for (column, write) in cells {
                    if case .add(let delta) = write, case .integer(let old) = values[column] {
                        let (sum, overflow) = old.addingReportingOverflow(delta)
                        if overflow { return "\(old) + \(delta) overflows" }
                        values[column] = .integer(sum)
                    } else {
                        values[column] = Self.apply(write, to: values[column])
                    }
                }
                if let refusal = refusal(of: values) { return refusal }
                if duplicate(of: values, key: key, in: scratch) != nil { return Self.duplicatePayload }
                scratch[key] = values
            case .delete(let row):
                if case .key(let key) = row { scratch[key] = nil }
            case .deleteAll:
                scratch.removeAll()
            }
        }
        rows = scratch
        largestKey = largest
        assigned = given
        return nil
    }

    /// The rowid SQLite gives the next row inserted without a key, when it is not random (the
    /// largest key in use is the largest there is).
    /// Whether SQLite may give a row inserted without a key a random key: the largest key is
    /// taken, or a pending insert takes it (without AUTOINCREMENT, which then refuses).
    var mayAssignRandomKeys: Bool {
        guard declaration.engine == .sqlite, declaration.key != .autoincrement else { return false }
        return file[.max] != nil || allUnits.contains { $0.operations.contains { if case .insert(.key(.max), _) = $0 { true } else { false } } }
    }

    private func nextRowID(rows: [Int64: [SQLValue]], largest: Int64?) -> Int64? {
        // AUTOINCREMENT counts from the largest key ever, and from 0 when that is negative.
        let top = declaration.key == .autoincrement ? [rows.keys.max(), largest, 0].compactMap { $0 }.max() : rows.keys.max()
        guard let top else { return 1 }
        return top == .max ? nil : top + 1
    }

    /// Why the database refuses a value before it looks at any row (so even where no row is
    /// changed): on PostgreSQL, a parameter its column's type cannot take.
    func refusal(ofValue value: SQLValue, in column: Item.Column) -> String? {
        guard declaration.engine == .postgres else { return nil }
        if case .text(let text) = value, text.unicodeScalars.contains("\0") { return "NUL in \(column)" }
        if case .text(let text) = value, let limit = declaration.characterLimit(of: column), text.unicodeScalars.count > limit {
            return "\(column) longer than \(limit)"
        }
        if case .integer(let integer) = value, let range = declaration.integerRange(of: column), !range.contains(integer) {
            return "\(column) \(integer) out of range"
        }
        return nil
    }

    /// Why the database refuses a row whose payload another row holds (a `UNIQUE` column).
    static let duplicatePayload = "UNIQUE payload"

    /// The key of another row that holds the row's payload, where the column is `UNIQUE` (NULL
    /// is never a duplicate).
    func duplicate(of values: [SQLValue], key: Int64, in rows: [Int64: [SQLValue]]) -> Int64? {
        let payload = Item.Column.payload.rawValue
        guard declaration.payloadIsUnique, values[payload] != .null else { return nil }
        return rows.first { $0.key != key && $0.value[payload] == values[payload] }?.key
    }

    /// The constraint a row breaks, if it breaks one.
    func refusal(of values: [SQLValue]) -> String? {
        if declaration.hasCountCheck, values[Item.Column.count.rawValue] == .integer(13) { return "CHECK count <> 13" }
        if declaration.noteIsNotNull, values[Item.Column.note.rawValue] == .null { return "NOT NULL note" }
        if case .real(let score) = values[Item.Column.score.rawValue], score.isNaN { return "NaN score" }
        guard declaration.engine == .postgres else { return nil }
        for column in [Item.Column.title, .note] {
            guard case .text(let text) = values[column.rawValue] else { continue }
            // PostgreSQL's text holds no NUL; VARCHAR(n) counts characters (Unicode scalars).
            if text.unicodeScalars.contains("\0") { return "NUL in \(column)" }
            if let limit = declaration.characterLimit(of: column), text.unicodeScalars.count > limit { return "\(column) longer than \(limit)" }
        }
        for column in [Item.Column.count, .flag, .link] {
            if case .integer(let integer) = values[column.rawValue], let range = declaration.integerRange(of: column), !range.contains(integer) {
                return "\(column) \(integer) out of range"
            }
        }
        return nil
    }

    /// What a flush commits: every unit in order, except one the database refuses (kept, marked)
    /// and the units that touch the rows of one kept.
    ///
    /// - Parameter fileKeys: The keys the file holds after the store's commit.
    /// - Parameter keyOf: The key SQLite assigned to an insert, by its number, as the store's
    ///   object now shows it.
    /// - Parameter retryingRefused: Whether units refused before are tried again (a flush's
    ///   first commit does; the commit of the units made while it was in flight does not, and
    ///   holds what links to their inserts).
    /// - Returns: Whether a refused unit stays, so that `flush()` throws; whether the commit
    ///   failed whole (then nothing committed, and every unit stays pending).
    mutating func flush(fileKeys: Set<Int64>, keyOf: (Int) -> Int64?, retryingRefused: Bool = true) -> (refused: Bool, problems: [String], failedWhole: Bool) {
        if unitsInFlight > 0, unitsInFlight < units.count {
            // The units in flight commit in a transaction of their own, before the flush takes
            // the units made meanwhile: a transaction that fails whole (a full AUTOINCREMENT
            // table) in the second leaves the first committed, and one that fails whole in the
            // first hands every unit back (the flush throws).
            let later = units[unitsInFlight...]
            units.removeSubrange(unitsInFlight...)
            let first = flush(fileKeys: fileKeys, keyOf: keyOf)
            units += later
            guard !first.failedWhole else { return first }
            let second = flush(fileKeys: fileKeys, keyOf: keyOf, retryingRefused: false)
            return (second.refused, first.problems + second.problems, second.failedWhole)
        }
        // Units held because they link to a row whose insert stays pending: those the flush
        // does not hand over, then those found by a try (the flush is made again without them).
        var held = unitsLeftOut(retryingRefused: retryingRefused)
        while true {
            var staying: [(index: Int, unit: Unit)] = []
            var committed: [(index: Int, unit: Unit)] = []
            var rows = file
            var largest = largestKeyEver
            var assigned: [Int: Int64] = [:]
            var problems: [String] = []
            for (index, var unit) in units.enumerated() {
                if held.contains(index)
                    || staying.contains(where: { $0.unit.overlaps(unit) || Self.references(unit, insertsOf: $0.unit) }) {
                    staying.append((index, unit))
                    continue
                }
                if let refusal = commit(unit, onto: &rows, largestKey: &largest, assigned: &assigned, keyOf: keyOf, fileKeys: fileKeys) {
                    if refusal == Self.full {
                        // The transaction fails whole: every unit stays pending, none in flight.
                        unitsInFlight = 0
                        return (true, [], true)
                    }
                    if refusal.hasPrefix("no key") { problems.append(refusal) }
                    unit.refuse(refusal)
                    staying.append((index, unit))
                } else {
                    committed.append((index, unit))
                }
            }
            let late = committed.filter { entry in staying.contains { Self.references(entry.unit, insertsOf: $0.unit) } }.map(\.index)
            guard late.isEmpty else {
                held.formUnion(late)
                continue
            }
            units = staying.map(\.unit)
            unitsInFlight = 0
            file = Self.resolvingLinks(rows) { assigned[$0] ?? keyOf($0) }
            largestKeyEver = largest
            return (hasRefusedUnits, problems, false)
        }
    }

    /// The units a flush does not hand over, by index: those refused for good (or refused
    /// before, where it does not try them again), the later ones that touch their rows, and
    /// every one that links to a row one of these inserts.
    private func unitsLeftOut(retryingRefused: Bool) -> Set<Int> {
        var linking: Set<Int> = []
        while true {
            var staying: [(index: Int, unit: Unit)] = []
            var handed: [(index: Int, unit: Unit)] = []
            for (index, unit) in units.enumerated() {
                if unit.isRefusedForGood || (unit.isRefused && !retryingRefused) || linking.contains(index) || staying.contains(where: { $0.unit.overlaps(unit) }) {
                    staying.append((index, unit))
                } else {
                    handed.append((index, unit))
                }
            }
            let late = handed.filter { entry in staying.contains { Self.references(entry.unit, insertsOf: $0.unit) } }.map(\.index)
            guard !late.isEmpty else { return Set(staying.map(\.index)) }
            linking.formUnion(late)
        }
    }

    /// Rows with each link to a new row replaced by that row's key, or NULL where it has none.
    private static func resolvingLinks(_ rows: [Int64: [SQLValue]], keyOf: (Int) -> Int64?) -> [Int64: [SQLValue]] {
        let link = Item.Column.link.rawValue
        return rows.mapValues { values in
            guard let number = newRow(linkedBy: values[link]) else { return values }
            var resolved = values
            resolved[link] = keyOf(number).map { .integer($0) } ?? .null
            return resolved
        }
    }

    /// What a bulk insert commits: every pending unit, then `rows`, in one transaction, or
    /// nothing at all. A unit refused for good (and those held behind it) stops it before it
    /// starts, as it would be left out of the transaction; a unit refused in it is marked.
    ///
    /// - Returns: Why nothing committed; nil when everything did.
    mutating func bulkInsert(_ rows: [[SQLValue]], fileKeys: Set<Int64>, keyOf: (Int) -> Int64?) -> String? {
        if units.contains(where: \.isRefusedForGood) { return "a change refused for good is pending" }
        var scratch = file
        var largest = largestKeyEver
        var assigned: [Int: Int64] = [:]
        for index in units.indices {
            guard let refusal = commit(units[index], onto: &scratch, largestKey: &largest, assigned: &assigned, keyOf: keyOf, fileKeys: fileKeys) else { continue }
            // The first unit the database refuses is marked, as a flush marks it; a commit that
            // fails whole (a full AUTOINCREMENT table) marks nothing.
            if refusal != Self.full, !refusal.hasPrefix("no key") { units[index].refuse(refusal) }
            return refusal
        }
        for values in rows {
            if let refusal = refusal(of: values) { return refusal }
            guard case .integer(let key) = values[0] else { return "a bulk row without a key" }
            if scratch[key] != nil { return "key \(key) exists" }
            if duplicate(of: values, key: key, in: scratch) != nil { return Self.duplicatePayload }
            scratch[key] = values
            largest = max(largest ?? key, key)
        }
        units = []
        file = Self.resolvingLinks(scratch) { assigned[$0] ?? keyOf($0) }
        largestKeyEver = largest
        return nil
    }

    /// Why a commit fails whole: an AUTOINCREMENT table that once held the largest key cannot
    /// give another row a key (SQLITE_FULL).
    static let full = "database or disk is full"
    static let gone = "is gone"

    /// A flush whose commits fail at their end (a full disk, an I/O error). As in
    /// ``flush(fileKeys:keyOf:)``, the units in flight commit on their own first; the flush goes
    /// on to the units made meanwhile only when that commit did not fail, that is, when it had
    /// nothing to commit. Returns whether the flush throws.
    mutating func flushFailingAtCommit(fileKeys: Set<Int64>, keyOf: (Int) -> Int64?) -> Bool {
        // A commit in flight that fails hands its units back: they are pending again.
        defer { unitsInFlight = 0 }
        if unitsInFlight > 0, unitsInFlight < units.count {
            let later = units[unitsInFlight...]
            units.removeSubrange(unitsInFlight...)
            let failed = commitFailingAtItsEnd(fileKeys: fileKeys, keyOf: keyOf)
            units += later
            if failed { return true }
        }
        commitFailingAtItsEnd(fileKeys: fileKeys, keyOf: keyOf)
        return !units.isEmpty
    }

    /// One commit of every unit that fails at its end: what the database refused on the way
    /// is learned only when nothing is left to commit, for then no commit runs; otherwise
    /// nothing changes. Returns whether a commit ran (and failed).
    @discardableResult
    private mutating func commitFailingAtItsEnd(fileKeys: Set<Int64>, keyOf: (Int) -> Int64?) -> Bool {
        var trial = self
        trial.unitsInFlight = 0
        _ = trial.flush(fileKeys: fileKeys, keyOf: keyOf)
        // A unit commits whole or stays: as many units as before means none committed.
        guard trial.units.count == units.count else { return true }
        self = trial
        return false
    }

    /// A flush takes every unit: writes made until it finishes are units of their own.
    mutating func unitsTakenForCommit() {
        unitsInFlight = units.count
    }

    /// Forgets the changes not committed: the store that held them is gone.
    mutating func forgetPending() {
        units = []
    }

    /// Renames an insert's row once its key is known.
    mutating func name(_ number: Int, key: Int64) {
        let marker = Self.keyOfNew(number), link = Item.Column.link.rawValue
        func rename(_ operation: Operation) -> Operation {
            switch operation {
            case .insert(let row, var values):
                if values[link] == marker { values[link] = .integer(key) }
                return .insert(row == .new(number) ? .key(key) : row, values)
            case .update(let row, var cells):
                if case .set(marker)? = cells[link] { cells[link] = .set(.integer(key)) }
                return .update(row == .new(number) ? .key(key) : row, cells)
            case .delete(.new(number)): return .delete(.key(key))
            default: return operation
            }
        }
        for index in units.indices { units[index].operations = units[index].operations.map(rename) }
    }

    /// Gives up on every unit not in flight (`discardPendingChanges()`); returns the rows they
    /// inserted.
    mutating func discardPending() -> [RowID] {
        let discarded = units[unitsInFlight...]
        let inserted = discarded.flatMap { $0.operations.compactMap { if case .insert(let row, _) = $0 { row } else { nil } } }
        units.removeSubrange(unitsInFlight...)
        return inserted
    }

    /// Gives up on the first refused unit (see ``discard(at:)``).
    mutating func discardFirstRefused() -> [RowID] {
        guard let index = units.firstIndex(where: \.isRefused) else { return [] }
        return discard(at: index)
    }

    /// Gives up on a unit not in flight (`discard(_:)` of its pending change), and on the
    /// updates and deletes of the rows it inserted with a key that later units hold (they were
    /// made to the objects it inserted), except in refused units; returns the rows it inserted.
    mutating func discard(at index: Int) -> [RowID] {
        precondition(index >= unitsInFlight, "unit \(index) is in flight")
        let inserted = units.remove(at: index).operations.compactMap { if case .insert(let row, _) = $0 { row } else { nil } }
        dropChanges(of: Set(inserted.compactMap { if case .key(let key) = $0 { key } else { nil } }), from: index)
        // Changes made to a new row while its insert was in flight go with it (they have no row).
        let new = Set(inserted.filter { if case .new = $0 { true } else { false } })
        for later in units.indices where later >= index && !units[later].isRefused {
            units[later].operations.removeAll { operation in operation.row.map(new.contains) == true }
        }
        units.removeAll(where: \.isEmpty)
        return inserted
    }

    /// Another connection's delete of a row and insert of one with the same key, in one
    /// transaction; false (nothing changes) when the database refuses the new row.
    ///
    /// - Parameter byConflict: As SQLite's `REPLACE`, which also deletes the row that holds
    ///   the new row's value of a `UNIQUE` column (else that refuses it).
    mutating func externalReplace(_ key: Int64, with values: [SQLValue], byConflict: Bool) -> Bool {
        guard refusal(of: values) == nil else { return false }
        let holder = duplicate(of: values, key: key, in: file)
        guard holder == nil || byConflict else { return false }
        _ = external { rows in
            rows[key] = nil
            if let holder { rows[holder] = nil }
            return true
        }
        return external(inserting: key) { rows in
            rows[key] = values
            return true
        }
    }

    /// The new rows whose inserts are in flight (their keys not known yet).
    var newRowsInFlight: [Int] {
        units.prefix(unitsInFlight).flatMap(\.operations).compactMap { if case .insert(.new(let number), _) = $0 { number } else { nil } }
    }

    /// Whether a pending unit inserts the row.
    func inserts(_ row: RowID) -> Bool {
        units.contains { $0.operations.contains { if case .insert(row, _) = $0 { true } else { false } } }
    }

    /// Drops the updates and deletes of rows that come before the program's own insert of the
    /// row, if any, except in refused units; a unit left with nothing to do goes too.
    private mutating func dropChanges(of keys: Set<Int64>, from start: Int = 0) {
        var keys = keys
        for index in units.indices where index >= start {
            let inserted = Set(units[index].operations.compactMap { if case .insert(.key(let key), _) = $0 { key } else { nil } })
            if units[index].isRefused {
                for key in keys { units[index].setAsideChanges(of: key) }
                keys.subtract(inserted)
                continue
            }
            var kept: [Operation] = []
            for operation in units[index].operations {
                switch operation {
                case .update(.key(let key), _), .delete(.key(let key)):
                    if !keys.contains(key) { kept.append(operation) }
                case .insert(.key(let key), _):
                    keys.remove(key)
                    kept.append(operation)
                default:
                    kept.append(operation)
                }
            }
            units[index].operations = kept
        }
        units.removeAll(where: \.isEmpty)
    }

    // MARK: - Other connections


    /// Another connection's committed change, applied to the file; false when the database
    /// refuses it (nothing changes then).
    ///
    /// - Parameter inserting: The key an insert of the change names, whether it inserts the row,
    ///   updates it (an upsert) or skips it (AUTOINCREMENT remembers it all the same).
    ///
    /// The program's updates and deletes of a row the change removes (deleted, or given another
    /// key) are dropped, unless their unit was refused: there is no row left for them, and a row
    /// of that key made later is another row. A row the program inserts itself keeps them.
    mutating func external(inserting: Int64? = nil, _ change: (inout [Int64: [SQLValue]]) -> Bool) -> Bool {
        var rows = file
        guard change(&rows), rows.values.allSatisfy({ refusal(of: $0) == nil }), !rows.contains(where: { duplicate(of: $0.value, key: $0.key, in: rows) != nil }) else {
            return false
        }
        let removed = Set(file.keys).subtracting(rows.keys)
        file = rows
        if let inserting { largestKeyEver = max(largestKeyEver ?? inserting, inserting) }
        dropChanges(of: removed)
        return true
    }
}
