import Foundation
import Testing
@testable import TrackedModels

/// Sectioned results and grouped aggregates: their contracts on a real file, with sections and
/// groups by a to-one's column (`\.list?.title`).
@MainActor
@Suite struct LiveSectionsTests {
    /// Lists 1 "Groceries" and 2 "Chores"; entries 1 Milk, 2 Eggs in list 1, 3 Sweep in list 2,
    /// 4 Loose in none.
    @MainActor final class Lists {
        let directory: TemporaryDirectory
        let store: ModelStore
        let groceries = TodoList(id: 1, title: "Groceries")
        let chores = TodoList(id: 2, title: "Chores")
        let entries: [Entry]

        init() async throws {
            directory = try TemporaryDirectory()
            store = try ModelStore(.file(directory.path("db.sqlite")), models: [TodoList.self, Entry.self], configuration: Stores.configuration())
            entries = [
                Entry(id: 1, title: "Milk", list: groceries), Entry(id: 2, title: "Eggs", list: groceries),
                Entry(id: 3, title: "Sweep", list: chores), Entry(id: 4, title: "Loose"),
            ]
            try store.insert(contentsOf: entries)
            try await store.flush()
        }

        var byTitle: FetchDescriptor<Entry> { FetchDescriptor(sortBy: [SortDescriptor(\.title)]) }
    }

    private func shape(_ sections: SectionedResults<Entry, String?>) -> [String] {
        sections.map { section in "\(section.key ?? "-"): \(section.map(\.title).joined(separator: " "))" }
    }

    @Test func sectionsAreInKeyOrderWithRowsInTheDescriptorsOrder() async throws {
        let lists = try await Lists()
        let sections = try lists.store.results(for: lists.byTitle, sectionedBy: \.list?.title)
        #expect(shape(sections) == ["-: Loose", "Chores: Sweep", "Groceries: Eggs Milk"])
        let reversed = try lists.store.results(for: lists.byTitle, sectionedBy: \.list?.title, order: .reverse)
        #expect(reversed.map(\.key) == ["Groceries", "Chores", nil])
        #expect(sections.section(for: "Groceries")?.keys == [2, 1])
        #expect(sections.section(for: "Errands") == nil)
    }

    @Test func aRowMovesBetweenSectionsAndOnlyTheirObserversHear() async throws {
        let lists = try await Lists()
        let sections = try lists.store.results(for: lists.byTitle, sectionedBy: \.list?.title)
        let groceries = try #require(sections.section(for: "Groceries")), chores = try #require(sections.section(for: "Chores"))
        let loose = try #require(sections.section(for: nil))
        let heardGroceries = ObservationCount(), heardChores = ObservationCount(), heardLoose = ObservationCount(), heardSections = ObservationCount()
        heardGroceries.follow { _ = groceries.keys }
        heardChores.follow { _ = chores.keys }
        heardLoose.follow { _ = loose.keys }
        heardSections.follow { _ = sections.map(\.key) }

        lists.entries[1].list = lists.chores                    // Eggs: Groceries → Chores
        for _ in 0..<5 { await Task.yield() }
        #expect(shape(sections) == ["-: Loose", "Chores: Eggs Sweep", "Groceries: Milk"])
        #expect(heardGroceries.count == 1 && heardChores.count == 1)
        #expect(heardLoose.count == 0 && heardSections.count == 0)

        lists.entries[0].title = "Oat milk"                     // within Groceries, alone there
        lists.entries[3].title = "Still loose"                  // a column the loose section sorts by
        for _ in 0..<5 { await Task.yield() }
        #expect(heardGroceries.count == 1 && heardLoose.count == 0)

        lists.entries[0].list = nil                             // Groceries empties, and goes
        for _ in 0..<5 { await Task.yield() }
        #expect(shape(sections) == ["-: Oat milk Still loose", "Chores: Eggs Sweep"])
        #expect(heardSections.count == 1 && heardGroceries.count == 2 && heardLoose.count == 1 && heardChores.count == 1)
        #expect(groceries.isEmpty)
    }

    @Test func aTargetsRetitleMovesItsRowsIntoTheNewSection() async throws {
        let lists = try await Lists()
        let sections = try lists.store.results(for: lists.byTitle, sectionedBy: \.list?.title)
        lists.groceries.title = "Food"
        #expect(shape(sections) == ["-: Loose", "Chores: Sweep", "Food: Eggs Milk"])
        // Another process renames it back, and moves Sweep out of every list.
        let other = try Connection(filename: lists.directory.path("db.sqlite"), mode: .readWrite, busyTimeout: .seconds(5))
        try await lists.store.flush()
        try other.execute("UPDATE lists SET title = 'Groceries' WHERE id = 1; UPDATE entries SET list_id = NULL WHERE id = 3")
        try await lists.store.refreshExternalChanges()
        #expect(shape(sections) == ["-: Loose Sweep", "Groceries: Eggs Milk"])
        #expect(sections.allSatisfy { section in section.map(\.id) == (try? lists.store.fetch(FetchDescriptor<Entry>(sortBy: [SortDescriptor(\.title)])).filter { $0.list?.title == section.key }.map(\.id)) })
    }

    @Test func aSectionThatEmptiesAndFillsInOneTransactionIsTheSameAndHeardOnce() async throws {
        let lists = try await Lists()
        let sections = try lists.store.results(for: lists.byTitle, sectionedBy: \.list?.title)
        let chores = try #require(sections.section(for: "Chores"))
        let heardChores = ObservationCount(), heardSections = ObservationCount()
        heardChores.follow { _ = chores.keys }
        heardSections.follow { _ = sections.map(\.key) }
        try lists.store.transaction {
            lists.entries[2].list = nil
            lists.entries[2].list = lists.chores                // back where it was: no change
        }
        for _ in 0..<5 { await Task.yield() }
        #expect(heardChores.count == 0 && heardSections.count == 0)
        try lists.store.transaction {
            lists.entries[2].list = nil
            lists.entries[3].list = lists.chores                // Chores: Sweep out, Loose in
        }
        for _ in 0..<5 { await Task.yield() }
        #expect(sections.section(for: "Chores") === chores && chores.map(\.title) == ["Loose"])
        #expect(heardChores.count == 1 && heardSections.count == 0)
    }

    @Test func aDescriptorWithAWindowIsRefusedSayingWhy() async throws {
        let lists = try await Lists()
        var descriptor = lists.byTitle
        descriptor.fetchOffset = 2
        let error = #expect(throws: StoreError.self) { try lists.store.results(for: descriptor, sectionedBy: \.title) }
        #expect(error?.code == .unsupportedPredicate)
        #expect(error?.message == "sectioned results is of every row a descriptor matches, but this one has a fetchLimit or a fetchOffset; set both to nil")
    }

    /// The stored forms of one key (a UUID's text in upper and lower case, a Bool stored as 2)
    /// are one section and one group, found by the key.
    @Test func storedFormsOfOneKeyAreOneGroup() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("samples.sqlite")
        let uuid = UUID()
        func sample(_ flag: Bool) -> Sample {
            Sample(
                flag: flag, int: 0, int64: 0, int32: 0, double: 0, string: "", data: Data(), date: Date(timeIntervalSince1970: 0),
                uuid: uuid, priority: .high, mood: .excited
            )
        }
        let store = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        try store.insert(contentsOf: [sample(true), sample(true), sample(false)])
        try await store.close()
        let peek = try Peek(path)
        try peek.execute("UPDATE samples SET uuid = upper(uuid) WHERE id = 1; UPDATE samples SET flag = 2 WHERE id = 2")
        #expect(try peek.value("SELECT count(DISTINCT uuid) || '/' || count(DISTINCT flag) FROM samples") == .text("2/3"))
        let reopened = try ModelStore(.file(path), models: [Sample.self], configuration: Stores.configuration())
        let byUUID = try reopened.aggregate(.count, of: FetchDescriptor<Sample>(), groupedBy: \.uuid)
        #expect(byUUID.groups == [uuid] && byUUID[uuid] == 3)
        let byFlag = try reopened.results(for: FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.id)]), sectionedBy: \.flag)
        #expect(byFlag.map(\.key) == [false, true])
        #expect(byFlag.section(for: true)?.keys == [1, 2])
        try await reopened.close()
    }

    // MARK: - Grouped aggregates

    @Test func aGroupedCountFollowsRowsBetweenGroupsAndOnlyTheirObserversHear() async throws {
        let lists = try await Lists()
        let perList = try lists.store.aggregate(.count, of: FetchDescriptor<Entry>(), groupedBy: \.list?.title)
        let longest = try lists.store.aggregate(.maximum(\.title), of: FetchDescriptor<Entry>(), groupedBy: \.list?.title, order: .reverse)
        #expect(perList.groups == [nil, "Chores", "Groceries"] && longest.groups == ["Groceries", "Chores", nil])
        #expect(perList["Groceries"] == 2 && perList["Chores"] == 1 && perList[nil] == 1 && perList["Errands"] == 0)
        #expect(longest["Groceries"] == "Milk" && longest["Errands"] == nil)
        let heardGroceries = ObservationCount(), heardChores = ObservationCount(), heardLoose = ObservationCount(), heardGroups = ObservationCount()
        heardGroceries.follow { _ = perList["Groceries"] }
        heardChores.follow { _ = perList["Chores"] }
        heardLoose.follow { _ = perList[nil] }
        heardGroups.follow { _ = perList.groups }

        lists.entries[0].list = lists.chores                    // Milk: Groceries → Chores
        for _ in 0..<5 { await Task.yield() }
        #expect(perList["Groceries"] == 1 && perList["Chores"] == 2 && longest["Groceries"] == "Eggs" && longest["Chores"] == "Sweep")
        #expect(heardGroceries.count == 1 && heardChores.count == 1 && heardLoose.count == 0 && heardGroups.count == 0)

        lists.entries[1].title = "Free-range eggs"             // no count changes
        lists.entries[1].list = nil                             // Groceries empties, and goes
        for _ in 0..<5 { await Task.yield() }
        #expect(perList.groups == [nil, "Chores"] && perList["Groceries"] == 0 && perList[nil] == 2)
        #expect(longest.groups == ["Chores", nil] && longest[nil] == "Loose")
        #expect(heardGroceries.count == 2 && heardChores.count == 1 && heardLoose.count == 1 && heardGroups.count == 1)

        lists.chores.title = "Groceries"                        // a target's retitle regroups its rows
        for _ in 0..<5 { await Task.yield() }
        #expect(perList.groups == [nil, "Groceries"] && perList["Groceries"] == 2 && perList["Chores"] == 0)
        try await lists.store.flush()
        let fresh = try lists.store.fetch(FetchDescriptor<Entry>())
        #expect(perList[nil] == fresh.count { $0.list == nil })
    }

    @Test func aGroupedSumFollowsAnotherProcessAndAReset() async throws {
        let directory = try TemporaryDirectory()
        let store = try ModelStore(.file(directory.path("model.sqlite")), models: [Row.self], configuration: Stores.configuration())
        try store.insert(contentsOf: (0..<10).map { Row(id: $0, title: $0 % 2 == 0 ? "even" : "odd", count: Int($0)) })
        try await store.flush()
        let sums = try store.aggregate(.sum(\.count), of: FetchDescriptor<Row>(), groupedBy: \.title)
        #expect(sums.groups == ["even", "odd"] && sums["even"] == 20 && sums["odd"] == 25)
        let other = try Connection(filename: directory.path("model.sqlite"), mode: .readWrite, busyTimeout: .seconds(5))
        try other.execute("UPDATE rows SET title = 'many' WHERE id > 5")
        try await store.refreshExternalChanges()
        #expect(sums.groups == ["even", "many", "odd"] && sums["even"] == 6 && sums["many"] == 30 && sums["odd"] == 9)
        try other.execute("DELETE FROM rows")
        try await store.refreshExternalChanges()
        #expect(sums.groups.isEmpty && sums["many"] == 0)   // the sum of no rows
        try await store.close()
    }
}
