import Foundation
import Logging
import Testing
@testable import TrackedModels

/// What is checked after every step: objects, `find`, typed fetches, live lists, feed events,
/// and the database itself, each against the reference.
extension Harness {
    func check() async throws {
        let store = try live
        let shown = reference.shownRows
        if let logGap { throw Divergence(message: logGap) }
        // Every error published on writeErrors was logged as a warning too, with its message.
        let warned = Set(log.records(at: .warning).compactMap { $0.metadata["error"] })
        if let unlogged = writeErrorsHeard.first(where: { !warned.contains($0.message) }) {
            throw Divergence(message: "writeErrors published \(unlogged), which no warning logged")
        }
        guard store.hasPendingChanges == reference.hasPendingUnits else {
            throw Divergence(message: "the store \(store.hasPendingChanges ? "has" : "has no") changes pending; the reference \(reference.hasPendingUnits ? "has" : "has none")")
        }
        if engine == .postgres {
            // Relationships are read synchronously from what the store holds: load them first.
            try await store.async.prefetch([\Item.link, \Item.linkedFrom], of: heldObjects.filter { $0._$tracking.isAttached })
        }
        try await checkObjects()
        try await checkFind(store, shown)
        try await checkFetches(store, shown)
        try await checkFeeds()
        try checkEvents(shown)
        try await checkFile()
        store.checkFeedInvariants()
        store.writeBehind.pending.checkInvariants()
        for list in lists { list.results.checkInvariants() }
        for list in generatedLists { list?.checkInvariants() }
    }

    private func describe(_ values: [SQLValue]?) -> String {
        values.map { "(\($0.map(\.describedExactly).joined(separator: ", ")))" } ?? "no row"
    }

    private func checkObjects() async throws {
        for (key, object) in objects {
            guard object._$tracking.isAttached else { throw Divergence(message: "the object of row \(key) is detached, but the row shows \(describe(reference.shown(.key(key))))") }
            let expected = reference.shown(.key(key))
            guard Values.same(object._$values(), expected) else {
                throw Divergence(message: "the object of row \(key) shows \(describe(object._$values())); expected \(describe(expected))")
            }
            try await checkLink(of: object, row: .key(key), expected: expected)
            try checkLinkedFrom(object, key: key)
            try checkTitleWatch(object, key: key)
        }
        for (number, object) in newObjects {
            guard object._$tracking.isAttached else { throw Divergence(message: "inserted object new#\(number) is detached") }
            guard var expected = reference.shown(.new(number)) else { continue }
            expected[0] = object._$values()[0]
            guard Values.same(object._$values(), expected) else {
                throw Divergence(message: "inserted object new#\(number) shows \(describe(object._$values())); expected \(describe(expected))")
            }
            try await checkLink(of: object, row: .new(number), expected: expected)
            try checkLinkedFrom(ofNew: object, number: number)
        }
        for object in detached where object._$tracking.isAttached {
            throw Divergence(message: "an object the store no longer manages (row \(object.id.map { "\($0)" } ?? "nil")) is still attached")
        }
    }

    /// An object's `link` is the object of the row its key names (the one `find` gives), the
    /// object of a row whose key the database has yet to assign, or nil when no row shows that
    /// key.
    private func checkLink(of object: Item, row: Reference.RowID, expected: [SQLValue]?) async throws {
        var target: Item?
        let link = reference.shown(row, keepingLinksToNewRows: true)?[Item.Column.link.rawValue]
        if let number = link.flatMap(Reference.newRow(linkedBy:)) {
            target = newObjects[number]
        } else if case .integer(let key)? = expected?[Item.Column.link.rawValue], reference.shown(.key(key)) != nil {
            target = try await find(key)
        }
        guard object.link === target else {
            throw Divergence(message: "row \(row).link is \(object.link.map { "the item \($0.id.map { "\($0)" } ?? "nil")" } ?? "nil"); expected \(target.map { "the item \($0.id.map { "\($0)" } ?? "nil")" } ?? "nil")")
        }
    }

    /// An object's `linkedFrom` is the objects of the rows that link to it: keyed ones in key
    /// order, then new ones in the order they were inserted.
    private func checkLinkedFrom(_ object: Item, key: Int64) throws {
        let heard = HeardFlag()
        let found = withObservationTracking { object.linkedFrom } onChange: { heard.value = true }
        // The same read under the store's dependency capture: a feed of the relationship.
        let fed = HeardFlag()
        let (_, token) = try live.withTracking { object.linkedFrom } onChange: { _ in fed.value = true }
        let members = found.map { $0.id.map { "\($0)" } ?? "new \(ObjectIdentifier($0))" }
        if let watch = linkedFromWatches[key], watch.object === object, watch.members != members {
            if !watch.heard.value { throw Divergence(message: "row \(key).linkedFrom went from \(watch.members) to \(members), and its observers heard nothing") }
            if !watch.fed.value { throw Divergence(message: "row \(key).linkedFrom went from \(watch.members) to \(members), and withTracking's subscriber heard nothing") }
        }
        linkedFromWatches[key] = LinkedFromWatch(object: object, members: members, heard: heard, fed: fed, token: token)
        let expected = rows(linkingTo: key)
        guard isObjects(found, of: expected) else {
            throw Divergence(message: "row \(key).linkedFrom is \(found.map { $0.id.map { "\($0)" } ?? "new" }); expected \(expected)")
        }
    }

    /// An object's `title` read under `withTracking`: a title that changed since the last
    /// check was heard by the subscription made then.
    private func checkTitleWatch(_ object: Item, key: Int64) throws {
        let fed = HeardFlag()
        let (title, token) = try live.withTracking { object.title } onChange: { _ in fed.value = true }
        if let watch = titleWatches[key], watch.object === object, watch.title != title, !watch.fed.value {
            throw Divergence(message: "row \(key).title went from \(watch.title.debugDescription) to \(title.debugDescription), and withTracking's subscriber heard nothing")
        }
        titleWatches[key] = TitleWatch(object: object, title: title, fed: fed, token: token)
    }

    private func checkFind(_ store: ModelStore, _ shown: [Int64: [SQLValue]]) async throws {
        var keys = Set(shown.keys).union(reference.file.keys).union(objects.keys)
        for object in detached { if let key = object.id { keys.insert(key) } }
        for key in keys.sorted() {
            let found = try await find(key)
            guard Values.same(found?._$values(), shown[key]) else {
                throw Divergence(message: "find(\(key)) returned \(describe(found?._$values())); expected \(describe(shown[key]))")
            }
            if let found, let held = objects[key], found !== held {
                throw Divergence(message: "find(\(key)) returned another object than the one the program holds")
            }
        }
    }

    /// The rows inserted whose key the database has yet to assign, each with the store's insert
    /// request (the order the store shows them in, after every key) and its values (its key
    /// NULL; its links to rows like it kept, as ``Reference/keyOfNew(_:)``).
    private func newRowsShown() -> [(request: UInt64, values: [SQLValue])] {
        reference.shownNewRows.map { number, values in
            (newObjects[number]?._$tracking.insertRequest ?? UInt64(number), values)
        }.sorted { $0.request < $1.request }
    }

    /// The reference's answer to a descriptor: the rows that show values, filtered, sorted
    /// (then by key; rows waiting for their key after every key, in the order of the inserts),
    /// windowed. A row waiting for its key is nil.
    /// The keys a fresh fetch of `query` returns over the rows shown, in the descriptor's
    /// window, or in another (a live list's, moved).
    private func answer(_ query: Query, _ shown: [Int64: [SQLValue]], window: (offset: Int, limit: Int?)? = nil) -> [Int64?] {
        let window = window ?? (query.descriptor.fetchOffset ?? 0, query.descriptor.fetchLimit)
        let link = Item.Column.link.rawValue
        // A row waiting for its key is judged with its key NULL, and sorts by the store's stand-in
        // for it (after every key, in the order of the inserts).
        let keyed = shown.map { (key: Optional($0.key), order: UInt64(0), values: $0.value, sorted: $0.value) }
        let new = newRowsShown().map { row in
            var values = row.values
            if Reference.newRow(linkedBy: values[link]) != nil { values[link] = .null }
            var sorted = values
            sorted[0] = KeyPlaceholder.value(forInsert: row.request)
            return (key: Int64?.none, order: row.request, values: values, sorted: sorted)
        }
        let sorted = (keyed + new).filter { query.matches($0.values) }.sorted { left, right in
            for term in query.sort {
                let order = Values.compare(left.sorted[term.column], right.sorted[term.column])
                if order != 0 { return (order < 0) == term.ascending }
            }
            switch (left.key, right.key) {
            case (let left?, let right?): return left < right
            case (.some, .none): return true
            case (.none, .some): return false
            case (.none, .none): return left.order < right.order
            }
        }.map(\.key)
        return Self.slice(sorted, window)
    }

    /// The part of a query's answer a window shows.
    static func slice<Element>(_ answer: [Element], _ window: (offset: Int, limit: Int?)) -> [Element] {
        let start = min(window.offset, answer.count)
        return Array(answer[start..<(start + min(window.limit ?? answer.count, answer.count - start))])
    }

    private func checkFetches(_ store: ModelStore, _ shown: [Int64: [SQLValue]]) async throws {
        // The raw-SQL form of the first query sees pending changes too (of rows with keys: SQL
        // cannot name a row whose key the database has yet to assign).
        let expected = answer(Self.queries[0], shown).compactMap { $0 }
        let parameter = engine == .sqlite ? "?" : "$1"
        let raw = try await engine == .sqlite
            ? store.fetch(Item.self, where: "count > ?", [0], orderBy: "count DESC, id").map(\.id)
            : store.async.fetch(Item.self, where: "count > $1", [0], orderBy: "count DESC, id").map(\.id)
        guard raw == expected else {
            throw Divergence(message: "fetch(where: \"count > 0\") returned \(raw.map { $0.map { "\($0)" } ?? "nil" }); expected \(expected)")
        }
        let rawCount = try await engine == .sqlite
            ? store.count(Item.self, where: "count > \(parameter)", [0])
            : store.async.count(Item.self, where: "count > \(parameter)", [0])
        guard rawCount == expected.count else { throw Divergence(message: "count(where: \"count > 0\") is \(rawCount); expected \(expected.count)") }
        for (index, entry) in queries.enumerated() {
            let expected = answer(entry, shown)
            let fetched: [Item]
            do {
                fetched = try await engine == .sqlite ? store.fetch(entry.descriptor) : store.async.fetch(entry.descriptor)
            } catch {
                throw Divergence(message: "fetch(\(entry.name)) threw \(error)")
            }
            let keys = fetched.map { $0.id }
            guard keys == expected else {
                throw Divergence(message: "fetch(\(entry.name)) returned \(keys.map { $0.map { "\($0)" } ?? "nil" }); expected \(expected)")
            }
            let count = try await engine == .sqlite ? store.fetchCount(entry.descriptor) : store.async.fetchCount(entry.descriptor)
            guard count == expected.count else { throw Divergence(message: "fetchCount(\(entry.name)) is \(count); expected \(expected.count)") }
            for list in lists where list.query == index {
                let live = list.results.keys
                // A list whose window the program moved shows another part of the answer.
                let window = (offset: list.results.fetchOffset, limit: list.results.fetchLimit)
                let isMoved = window != (entry.descriptor.fetchOffset ?? 0, entry.descriptor.fetchLimit)
                let expected = isMoved ? answer(entry, shown, window: window) : expected
                let fetched = isMoved ? try await fetch(entry.descriptor, window: window) : fetched
                guard live == expected else {
                    throw Divergence(message: "the live list (\(entry.name)\(isMoved ? ", its window moved to offset \(window.offset), limit \(window.limit.map { "\($0)" } ?? "nil")" : "")) holds \(live); a fresh fetch returns \(expected)")
                }
                if let told = list.toldWhenCancelled {
                    guard list.toldKeys == told else { throw Divergence(message: "the live list (\(entry.name)) called an onChange handler after its subscription was cancelled") }
                } else if list.toldKeys != live {
                    throw Divergence(message: "the live list (\(entry.name)) holds \(live); its onChange differences, applied in turn, give \(list.toldKeys.map { "\($0)" } ?? "a difference that does not apply")")
                }
                if list.streamedKeys != nil {
                    await letStreamsCatchUp { list.streamedKeys.flatMap { $0 } == live }
                    guard let streamed = list.streamedKeys, streamed == live else {
                        throw Divergence(message: "the live list (\(entry.name)) holds \(live); its differences stream, applied in turn, gives \(list.streamedKeys.flatMap { $0 }.map { "\($0)" } ?? "a difference that does not apply")")
                    }
                }
                // Its elements are the objects of those rows: the program's own where it holds one.
                // On PostgreSQL, an element whose row another connection replaced in this step is
                // read again (awaited) when first asked for: the next step's check finds it.
                for (element, fetched) in zip(list.results, fetched) where element !== fetched {
                    if engine == .postgres, let key = element.id, replacedKeys.contains(key) { continue }
                    throw Divergence(message: "the live list (\(entry.name)) holds another object for row \(element.id.map { "\($0)" } ?? "nil") than a fetch returns")
                }
            }
        }
        try await checkGeneratedQueries(store, shown)
        try await checkAggregates()
        try await checkGroups()
    }

    /// A fetch of a descriptor in another window, as a live list whose window moved shows it.
    private func fetch(_ descriptor: FetchDescriptor<Item>, window: (offset: Int, limit: Int?)) async throws -> [Item] {
        var descriptor = descriptor
        descriptor.fetchOffset = window.offset
        descriptor.fetchLimit = window.limit
        let store = try live
        return try await engine == .sqlite ? store.fetch(descriptor) : store.async.fetch(descriptor)
    }

    /// The generated queries: SQLite's answer over the rows the reference shows, the store's
    /// fetch (SQL over the file, with pending rows judged in memory) and the live list (kept
    /// by the evaluator through every step) must agree.
    ///
    /// Rows waiting for their key take keys past every other in the scratch table, in the
    /// order of their inserts, and links to them point there: the generated predicates and
    /// orders never read a key's value, so the scratch rows are judged and sorted as the store
    /// judges them (their key NULL, after every key), and reached through links as the store
    /// reaches them. Such a key is nil in the answer. (Where no key is left past the largest,
    /// the step is not checked.)
    private func checkGeneratedQueries(_ store: ModelStore, _ shown: [Int64: [SQLValue]]) async throws {
        try scratch.execute("DELETE FROM items")
        let insert = try scratch.cachedStatement("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        let new = newRowsShown()
        // Past every key and every key a link names, a waiting row's too (a link to no row must
        // reach none).
        let linked = (Array(shown.values) + new.map(\.values)).compactMap { values -> Int64? in
            if case .integer(let key) = values[Item.Column.link.rawValue] { key } else { nil }
        }
        let largest = (Array(shown.keys) + linked).max() ?? 0
        guard largest <= Int64.max - Int64(new.count) else { return }
        var scratchKeyOfRequest: [UInt64: Int64] = [:]
        for (rank, row) in new.enumerated() { scratchKeyOfRequest[row.request] = largest + 1 + Int64(rank) }
        var scratchKeyOfNew: [Int: Int64] = [:]
        for (number, _) in reference.shownNewRows {
            scratchKeyOfNew[number] = (newObjects[number]?._$tracking.insertRequest).flatMap { scratchKeyOfRequest[$0] }
        }
        let waiting = Set(scratchKeyOfRequest.values)
        let link = Item.Column.link.rawValue
        func stored(_ values: [SQLValue], key: Int64) -> [SQLValue] {
            var row = values
            row[0] = .integer(key)
            if let number = Reference.newRow(linkedBy: row[link]) { row[link] = scratchKeyOfNew[number].map(SQLValue.integer) ?? .null }
            return row.map(\.nanAsNull)
        }
        for key in shown.keys {
            try insert.run(stored(reference.shown(.key(key), keepingLinksToNewRows: true) ?? shown[key]!, key: key))
        }
        for row in new {
            try insert.run(stored(row.values, key: scratchKeyOfRequest[row.request]!))
        }
        for (index, query) in generatedQueries.enumerated() {
            let select = SQLiteDialect.select(query, limit: nil)
            let expected = try scratch.makeStatement(select.sql).rows(select.arguments).map { row -> Int64? in
                let key = try Int64(sqlValue: row[0])
                return waiting.contains(key) ? nil : key
            }
            let name = "\(select.sql) with \(select.arguments)"
            // PostgreSQL refuses to compute what overflows (SQLite turns it into a real): no answer.
            guard let rows = try await generatedQueryRows(query, windowed: true) else { continue }
            let fetched = try rows.map { row -> Int64? in KeyPlaceholder.request(in: row[0]) == nil ? try Int64(sqlValue: row[0]) : nil }
            guard fetched == expected else {
                throw Divergence(message: "a fetch of the generated query \(name) returned \(fetched); SQLite over the rows the program shows returns \(expected)")
            }
            // The same SQL as a raw fetch over the real table (where it reads no other table):
            // `?NNN` parameters, and comparisons with the real columns' affinities. Raw SQL sees
            // the rows that have their keys (the README's documented limit).
            if engine == .sqlite, query.joins.isEmpty, let clauses = Self.clauses(of: select.sql) {
                let raw = try store.fetch(Item.self, where: clauses.condition, select.arguments.map(Self.columnValue), orderBy: clauses.ordering).map(\.id)
                guard raw == expected.compactMap({ $0 }) else {
                    throw Divergence(message: "a raw fetch where \(clauses.condition) order by \(clauses.ordering) with \(select.arguments) returned \(raw); SQLite over the rows the program shows returns \(expected)")
                }
            }
            guard index < generatedLists.count, let list = generatedLists[index] else { continue }
            let live = list.keys
            let window = (offset: list.fetchOffset, limit: list.fetchLimit)
            guard live == Self.slice(expected, window) else {
                throw Divergence(message: "the live list of the generated query \(name), its window at offset \(window.offset), limit \(window.limit.map { "\($0)" } ?? "nil"), holds \(live); SQLite over the rows the program shows returns \(expected)")
            }
        }
    }

    /// A value bound as itself, through the column value type that stores it.
    private static func columnValue(_ value: SQLValue) -> any ColumnValue {
        switch value {
        case .null: Int64?.none
        case .integer(let integer): integer
        case .real(let real): real
        case .text(let text): text
        case .blob(let data): data
        }
    }

    /// The condition and the ordering of a generated query's SELECT, for a raw fetch.
    private static func clauses(of sql: String) -> (condition: String, ordering: String)? {
        guard let orderBy = sql.range(of: " ORDER BY ", options: .backwards) else { return nil }
        let ordering = String(sql[orderBy.upperBound...])
        guard let whereClause = sql.range(of: " WHERE ") else { return ("1", ordering) }
        return (String(sql[whereClause.upperBound..<orderBy.lowerBound]), ordering)
    }

    /// Replays the events heard since the last step onto what subscribers knew: each must be a
    /// real change of a row (old value right, where the store knows it), and together they must
    /// bring subscribers to what the rows now show. A step that changes nothing is heard by
    /// nobody.
    private func checkEvents(_ shown: [Int64: [SQLValue]]) throws {
        defer {
            events = []
            heard = shown
        }
        guard !(heard == shown && events.isEmpty) else { return }
        let before = heard
        // A committed deleteAll may announce a reset though the table was empty: it does not
        // read the file to find out. Anything else is heard only when something changed.
        // The store does not read the file when the program inserts a key: an insert of a key
        // another connection holds (which the database refuses at commit) is heard as a new
        // row, so subscribers' view of such a key is not checked in that step.
        let heardChanges = events.filter { event in
            if event.kind == .reset, mayReset { return false }
            if case .integer(let key) = event.key, collidingKeys.contains(key) || replacedKeys.contains(key) { return false }
            return true
        }
        if !madeSeveralChanges, Self.sameRows(before.filter { !collidingKeys.contains($0.key) }, shown.filter { !collidingKeys.contains($0.key) }),
           !heardChanges.isEmpty {
            throw Divergence(message: "nothing changed, yet subscribers heard \(heardChanges.map { "\($0.kind) \($0.key)" })")
        }
        var view = heard
        // After a reset subscribers re-read; what follows it is checked only for its result.
        var reset = false
        for event in events {
            guard case .integer(let key) = event.key else {
                guard event.kind == .reset, mayReset else { throw Divergence(message: "unexpected \(event.kind) event with key \(event.key)") }
                view = shown
                reset = true
                continue
            }
            switch event.kind {
            case .reset:
                throw Divergence(message: "a reset with a key")
            case .children:
                throw Divergence(message: "a subscriber of the table heard \(event.kind) of \(key), which only a subscriber of that relationship asked for")
            case .insert:
                if view[key] != nil, !reset, !collidingKeys.contains(key) { throw Divergence(message: "an insert of \(key) was heard, but the row was there (heard: \(events.map { "\($0.kind) \($0.key)" }))") }
                view[key] = event.changes.map(\.new)
            case .delete:
                if view.removeValue(forKey: key) == nil, objects[key] != nil, !reset { throw Divergence(message: "a delete of \(key) was heard, but the row was not there") }
            case .update:
                var values = view[key] ?? Array(repeating: .null, count: Item.Column.allCases.count)
                for change in event.changes {
                    // The store knows a row's old values while the program holds its object;
                    // for other rows another connection changed, they are NULL. An old value it
                    // does give is what subscribers were told last.
                    let knowsOld = view[key] != nil && before[key] != nil && objects[key] != nil && !reset
                    let givesOld = change.old != .null && view[key] != nil && !reset && !collidingKeys.contains(key) && !replacedKeys.contains(key)
                    if knowsOld || change.old != .null, Values.same(change.old, change.new) {
                        throw Divergence(message: "an update of \(key).\(change.column) from \(change.old.describedExactly) to the same value was heard")
                    }
                    if knowsOld || givesOld, !Values.same(change.old, values[change.index]) {
                        throw Divergence(message: "an update of \(key).\(change.column) was heard with old value \(change.old.describedExactly); it was \(values[change.index].describedExactly)")
                    }
                    values[change.index] = change.new
                }
                view[key] = values
            }
        }
        for key in collidingKeys { view[key] = shown[key] }
        guard Self.sameRows(view, shown) else {
            let keys = Set(view.keys).union(shown.keys).sorted().filter { !Values.same(view[$0], shown[$0]) }
            throw Divergence(message: "subscribers heard \(events.map { "\($0.kind) \($0.key) \($0.changes.map { "\($0.column): \($0.old.describedExactly)→\($0.new.describedExactly)" })" }); rows \(keys) now show \(keys.map { describe(shown[$0]) }), subscribers know \(keys.map { describe(view[$0]) })")
        }
    }

    static func sameRows(_ a: [Int64: [SQLValue]], _ b: [Int64: [SQLValue]]) -> Bool {
        a.count == b.count && a.allSatisfy { Values.same($0.value, b[$0.key]) }
    }

    /// The database, read through the other connection, holds exactly the reference's rows.
    private func checkFile() async throws {
        var rows: [Int64: [SQLValue]] = [:]
        for row in try await other.rows("SELECT id, title, count, note, score, payload, flag, link_id FROM items") {
            guard case .integer(let key) = row[0] else { throw Divergence(message: "the file holds a row whose key is \(row[0].describedExactly)") }
            rows[key] = row
        }
        guard Self.sameRows(rows, reference.file) else {
            let keys = Set(rows.keys).union(reference.file.keys).sorted().filter { !Values.same(rows[$0], reference.file[$0]) }
            throw Divergence(message: "the file holds \(keys.map { "\($0): \(describe(rows[$0]))" }); expected \(keys.map { "\($0): \(describe(reference.file[$0]))" })")
        }
    }
}
