import Foundation
import Testing
@testable import TrackedModels

/// A row with an optional column, for predicates over nil.
@Tracked(table: "notes_rows")
final class NoteRow {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int
    var note: String?
    var score: Double?
    var flag: Bool
}

@MainActor
@Suite struct QueryTests {
    /// Rows with varied values: nil, empty, Unicode, negative numbers.
    private func store() async throws -> (ModelStore, [NoteRow]) {
        let store = try ModelStore(.inMemory, models: [NoteRow.self], configuration: Stores.configuration())
        let titles = ["Row 7", "row 17", "", "Zürich", "naïve", "Row 70", "ünïcode", "Row", "7", "Row 1"]
        let rows = titles.enumerated().map { index, title in
            NoteRow(
                id: Int64(index), title: title, count: index * 3 - 10,
                note: index % 3 == 0 ? nil : "note \(index)", score: index % 4 == 0 ? nil : Double(index) / 2,
                flag: index % 2 == 0
            )
        }
        try store.insert(contentsOf: rows)
        try await store.flush()
        return (store, rows)
    }

    private func ids(_ store: ModelStore, _ predicate: Predicate<NoteRow>) throws -> [Int64] {
        try store.fetch(FetchDescriptor(predicate: predicate, sortBy: [SortDescriptor(\.id)])).map(\.id)
    }

    /// Each predicate, run in SQLite, selects what Swift's own evaluation selects.
    @Test func translatedPredicatesAgreeWithSwift() async throws {
        let (store, rows) = try await store()
        let needle = "7"
        let allowed = [1, 5, 11]
        func check(_ predicate: Predicate<NoteRow>, _ line: Int = #line) throws {
            let expected = try rows.filter { try predicate.evaluate($0) }.map(\.id)
            #expect(try ids(store, predicate) == expected, "predicate on line \(line)")
        }
        try check(#Predicate<NoteRow> { $0.count > 10 && $0.title.contains("7") })
        try check(#Predicate<NoteRow> { $0.count <= -4 || $0.count >= 17 })
        try check(#Predicate<NoteRow> { $0.count != 5 && !$0.flag })
        try check(#Predicate<NoteRow> { $0.note == nil })
        try check(#Predicate<NoteRow> { $0.note != nil })
        try check(#Predicate<NoteRow> { ($0.note ?? "") == "note 4" })
        try check(#Predicate<NoteRow> { $0.note?.contains("5") == true })
        try check(#Predicate<NoteRow> { ($0.score ?? 0) > 1.5 })
        try check(#Predicate<NoteRow> { $0.count + 10 > 2 * $0.count })
        try check(#Predicate<NoteRow> { -$0.count < 0 })
        try check(#Predicate<NoteRow> { $0.count % 2 == 0 })
        try check(#Predicate<NoteRow> { $0.title.starts(with: "Row") })
        try check(#Predicate<NoteRow> { $0.title.starts(with: "") })
        try check(#Predicate<NoteRow> { $0.title.contains("") })
        try check(#Predicate<NoteRow> { $0.title.contains(needle) })
        try check(#Predicate<NoteRow> { $0.title == "Zürich" })
        try check(#Predicate<NoteRow> { $0.title < "Row 2" })
        try check(#Predicate<NoteRow> { allowed.contains($0.count) })
        try check(#Predicate<NoteRow> { $0.flag ? $0.count > 0 : $0.count < 0 })
        try check(#Predicate<NoteRow> { _ in true })
    }

    @Test func everyColumnTypeIsComparedAsItIsStored() async throws {
        let store = try ModelStore(.inMemory, models: [Sample.self], configuration: Stores.configuration())
        let uuid = UUID()
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let data = Data([0, 1, 2])
        let sample = Sample(
            flag: true, int: 1, int64: 2, int32: 3, double: 4.5, string: "s", data: data, date: date,
            uuid: uuid, priority: .high, mood: .excited, optionalPriority: .low
        )
        try store.insert(sample)
        try store.insert(Sample(flag: false, int: 0, int64: 0, int32: 0, double: 0, string: "", data: Data(), date: .distantPast, uuid: UUID(), priority: .low, mood: .calm))
        try await store.flush()
        let epoch = Date(timeIntervalSince1970: 0)
        let high = Priority.high
        let low = Priority.low
        let matches: [Predicate<Sample>] = [
            #Predicate { $0.flag },
            #Predicate { $0.uuid == uuid },
            #Predicate { $0.date == date },
            #Predicate { $0.date > epoch },
            #Predicate { $0.data == data },
            #Predicate { $0.priority == high },
            #Predicate { $0.optionalPriority == low },
            #Predicate { $0.int32 == 3 && $0.int64 == 2 && $0.double == 4.5 },
        ]
        for (index, predicate) in matches.enumerated() {
            let fetched = try store.fetch(FetchDescriptor(predicate: predicate))
            #expect(fetched.count == 1 && fetched.first === sample, "predicate \(index)")
        }
    }

    @Test func anUntranslatableExpressionIsAClearErrorNotAScan() async throws {
        let (store, _) = try await store()
        do {
            _ = try store.fetch(FetchDescriptor<NoteRow>(predicate: #Predicate { $0.title.count > 3 }))
            Issue.record("a predicate on String.count was accepted")
        } catch let error as StoreError {
            #expect(error.code == .unsupportedPredicate)
            #expect(error.message.contains("KeyPath"))
            #expect(error.message.contains("not a stored column"))
            #expect(error.message.contains("Supported:"))
        }
        // `.lexical` is the only string comparator Foundation has on Linux; a localized one (on
        // Apple platforms) is refused the same way.
        #expect(try store.fetch(FetchDescriptor<NoteRow>(sortBy: [SortDescriptor(\.title, comparator: .lexical)])).count == 10)
        var negative = FetchDescriptor<NoteRow>()
        negative.fetchLimit = -1
        #expect(throws: StoreError.self) { try store.fetch(negative) }
    }

    @Test func sortAndWindow() async throws {
        let (store, rows) = try await store()
        var descriptor = FetchDescriptor<NoteRow>(
            predicate: #Predicate { $0.count > -10 },
            sortBy: [SortDescriptor(\.note), SortDescriptor(\.count, order: .reverse)]
        )
        let all = try store.fetch(descriptor).map(\.id)
        // NULL sorts first, as in SQLite.
        let expected = rows.filter { $0.count > -10 }
            .sorted { ($0.note ?? "", $0.note == nil ? 0 : 1, -$0.count, $0.id) < ($1.note ?? "", $1.note == nil ? 0 : 1, -$1.count, $1.id) }.map(\.id)
        #expect(all == expected)
        descriptor.fetchOffset = 2
        descriptor.fetchLimit = 3
        #expect(try store.fetch(descriptor).map(\.id) == Array(expected[2..<5]))
        #expect(try store.fetchCount(descriptor) == 3)
        descriptor.fetchOffset = 100
        #expect(try store.fetch(descriptor).isEmpty)
        #expect(try store.fetchCount(descriptor) == 0)
        // Text sorts by UTF-8 bytes, as SQLite's BINARY collation does.
        let titles = try store.fetch(FetchDescriptor<NoteRow>(sortBy: [SortDescriptor(\.title)])).map(\.title)
        #expect(titles == rows.map(\.title).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    @Test func resultsRespectChangesNotYetFlushed() async throws {
        let (store, rows) = try await store()
        var descriptor = FetchDescriptor<NoteRow>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.count, order: .reverse)])
        descriptor.fetchLimit = 3
        let before = try store.fetch(descriptor).map(\.id)
        #expect(before == [9, 8, 7])
        rows[9].count = -1            // leaves
        rows[2].count = 100           // enters first
        try store.insert(NoteRow(id: 50, title: "new", count: 50, note: nil, score: nil, flag: false))
        try store.delete(rows[8])
        #expect(try store.fetch(descriptor).map(\.id) == [2, 50, 7])
        descriptor.fetchLimit = nil
        let expected = (rows.filter { $0.id != 8 && $0.count > 0 }.map { ($0.id, $0.count) } + [(50, 50)])
            .sorted { ($1.1, $0.0) < ($0.1, $1.0) }.map(\.0)
        #expect(try store.fetch(descriptor).map(\.id) == expected)
        #expect(try store.fetchCount(descriptor) == expected.count)
        try await store.flush()
        #expect(try store.fetch(descriptor).map(\.id) == expected)
    }
}

@Suite struct SortedRowsTests {
    /// Random inserts and removes, in both directions, with and without a sort value between
    /// the head and the key, of entries whose fingerprints decide (integers, short text) and
    /// entries they do not (NULL, reals, text sharing its first eight bytes or holding a zero
    /// byte, text keys), mixed: positions agree with a sorted array's.
    @Test(arguments: [(true, false), (false, false), (true, true), (false, true)])
    func insertsRemovesAndPositionsAgreeWithASortedArray(ascending: Bool, withMiddle: Bool) {
        let terms = [SortedRows.Order.Term(ascending: ascending, textOrder: .binary)] + (withMiddle ? [SortedRows.Order.Term(ascending: !ascending, textOrder: .binary)] : [])
        var rows = SortedRows(order: SortedRows.Order(terms: terms))
        func precedes(_ a: SortedRows.Entry, _ b: SortedRows.Entry) -> Bool {
            for (term, (x, y)) in zip(terms, zip([a.head] + a.middle, [b.head] + b.middle)) {
                let order = SQLValue.compare(x, y)
                if order != .orderedSame { return (order == .orderedAscending) == term.ascending }
            }
            return SQLValue.compare(a.key, b.key) == .orderedAscending
        }
        var generator = SystemRandomNumberGenerator()
        let texts = ["", "a", "Row 1", "Row 1234", "Row 12345", "Row 12346", "Row 1234\u{0}", "Row 1234\u{0}5", "Row\u{0}", "é", "éé", "zzzzzzzzz"]
        func randomEntry(key: Int) -> SortedRows.Entry {
            let head: SQLValue = switch Int.random(in: 0..<12, using: &generator) {
            case 0: .null
            case 1: .real(Double(Int.random(in: -3..<50, using: &generator)) + 0.5)
            case 2, 3, 4: .text(texts.randomElement(using: &generator)!)
            case 5: .integer(Int64.random(in: Int64.min...Int64.max, using: &generator))
            default: .integer(Int64.random(in: -3..<50, using: &generator))
            }
            let middle: [SQLValue] = withMiddle ? [Bool.random(using: &generator) ? .integer(Int64.random(in: 0..<3, using: &generator)) : .text(texts.randomElement(using: &generator)!)] : []
            return SortedRows.Entry(head: head, middle: middle, key: key % 7 == 0 ? .text("k\(key)") : .integer(Int64(key) - 1_000))
        }
        var reference: [SortedRows.Entry] = []
        for step in 0..<6_000 {
            let key = Int.random(in: 0..<2_000, using: &generator)
            if let existing = reference.firstIndex(where: { $0.key == randomEntry(key: key).key }) {
                let removed = reference.remove(at: existing)
                #expect(rows.remove(removed) == existing)
            } else {
                let entry = randomEntry(key: key)
                reference.append(entry)
                reference.sort(by: precedes)
                #expect(rows.rank(of: entry) == reference.firstIndex(of: entry))
                let position = rows.insert(entry)
                #expect(reference[position] == entry)
            }
            if step % 500 == 0 {
                rows.checkInvariants()
                #expect(rows.count == reference.count)
                #expect(rows.keys(in: 0..<rows.count) == reference.map(\.key))
                if let middle = reference.indices.randomElement() {
                    #expect(rows[middle].key == reference[middle].key)
                }
            }
        }
        rows.checkInvariants()
    }

    /// Every pair of entries over every kind of head and key, in both directions, with and
    /// without a middle: where two fingerprints decide, they decide as the entries compare.
    @Test(arguments: [true, false]) func fingerprintsDecideAsEntriesCompare(ascending: Bool) {
        let heads: [SQLValue] = [
            .null, .integer(.min), .integer(-1), .integer(0), .integer(7), .integer(.max), .real(0.5), .real(.nan),
            .text(""), .text("\u{0}"), .text("a"), .text("a\u{0}"), .text("abcdefgh"), .text("abcdefgh\u{0}"), .text("abcdefghi"),
            .text("abcdefgi"), .text("é"), .text("\u{7F}"), .blob(Data()), .blob(Data([0])),
        ]
        let keys: [SQLValue] = [.integer(-2), .integer(3), .text("k")]
        for middle in [[], [SQLValue.integer(1)], [SQLValue.text("m")]] {
            let terms = Array(repeating: SortedRows.Order.Term(ascending: ascending, textOrder: .binary), count: 1 + middle.count)
            let order = SortedRows.Order(terms: terms)
            let entries = heads.flatMap { head in keys.map { SortedRows.Entry(head: head, middle: middle, key: $0) } }
            for a in entries {
                for b in entries {
                    let decided = order.fingerprint(of: a).precedes(order.fingerprint(of: b))
                    #expect(decided == nil || decided == order.precedes(a, b), "\(a) before \(b)")
                }
            }
        }
    }

    @Test func valuesOrderAsSQLiteOrdersThem() {
        let ordered: [SQLValue] = [.null, .integer(-5), .real(-4.5), .integer(0), .real(0.5), .integer(1), .text(""), .text("B"), .text("a"), .text("é"), .blob(Data()), .blob(Data([1]))]
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                let expected: ComparisonResult = i < j ? .orderedAscending : i > j ? .orderedDescending : .orderedSame
                #expect(SQLValue.compare(a, b) == expected, "\(a) vs \(b)")
            }
        }
    }
}

@Suite struct ListChangesTests {
    /// Random bursts of edits (rows removed, inserted and moved), short ones translated one by
    /// one and long ones compared whole, as live results record them: applying the difference
    /// to the list before gives the list after.
    @Test func aBurstOfEditsIsOneDifference() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            let start: [SQLValue] = (0..<Int64.random(in: 0..<40, using: &generator)).map { .integer($0) }
            var current = start
            var changes = ListChanges()
            var next: Int64 = 1_000
            let edits = round % 3 == 0 ? Int.random(in: 60...200, using: &generator) : Int.random(in: 1...8, using: &generator)
            for _ in 0..<edits {
                if changes.isFull { changes.compareWhole(current: current) }
                if !current.isEmpty, Bool.random(using: &generator) {
                    let position = Int.random(in: 0..<current.count, using: &generator)
                    let key = current.remove(at: position)
                    changes.remove(key: key, at: position)
                    if Bool.random(using: &generator) {
                        // Moved: the same row somewhere else.
                        let to = Int.random(in: 0...current.count, using: &generator)
                        current.insert(key, at: to)
                        changes.insert(key: key, at: to)
                    }
                } else {
                    let position = Int.random(in: 0...current.count, using: &generator)
                    current.insert(.integer(next), at: position)
                    changes.insert(key: .integer(next), at: position)
                    next += 1
                }
            }
            var settled = changes
            settled.settle { current }
            #expect(Self.typed(start).applying(Self.difference(settled)) == Self.typed(current))
            // Replaced whole, as by a reset.
            var replaced = changes
            replaced.compareWhole(current: current)
            let after = current.shuffled(using: &generator).dropLast(Int.random(in: 0...3, using: &generator)) + [.integer(next)]
            replaced.settle { Array(after) }
            #expect(Self.typed(start).applying(Self.difference(replaced)) == Self.typed(Array(after)))
        }
    }

    /// The edits as live results of `Row` tell them.
    private static func difference(_ changes: ListChanges) -> FetchedResults<Row>.Difference {
        FetchedResults<Row>.Change(changes).difference
    }

    private static func typed(_ keys: [SQLValue]) -> [Int64?] {
        keys.map { if case .integer(let key) = $0 { key } else { nil } }
    }
}
