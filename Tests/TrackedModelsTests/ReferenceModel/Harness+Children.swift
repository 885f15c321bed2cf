import Foundation
import PropertyBased
@testable import TrackedModels

/// The to-many side of the relationship: a program assigns an item's `linkedFrom`, and every
/// item's (new ones' too) is checked against the rows the reference shows linking to it.
extension Harness {
    /// The rows that show a link to a value (a key, or ``Reference/keyOfNew(_:)``): keyed ones
    /// by key, then new ones by insert.
    func rows(linkingToValue value: SQLValue) -> [Reference.RowID] {
        let link = Item.Column.link.rawValue
        let keyed = reference.shownRows.keys.sorted().filter { reference.shown(.key($0), keepingLinksToNewRows: true)?[link] == value }
        let new = newObjects.keys.sorted().filter { reference.shown(.new($0), keepingLinksToNewRows: true)?[link] == value }
        return keyed.map { .key($0) } + new.map { .new($0) }
    }

    /// The link value that points at an object's row: its key, or the mark of a new row.
    private func linkValue(of row: Reference.RowID) -> SQLValue {
        switch row {
        case .key(let key): .integer(key)
        case .new(let number): Reference.keyOfNew(number)
        }
    }

    /// Assigns an item's `linkedFrom` some of the items the program holds: each chosen one
    /// links to it, each row that linked to it and is not chosen links to nothing, each
    /// through its own to-one (the store loads the objects of those it has to change).
    func assignChildren(_ a: UInt64, _ b: UInt64) async throws {
        guard let parent = pickHeld(a), isManaged(parent), let parentRow = row(of: parent) else { return }
        let candidates = heldObjects.filter { isManaged($0) && !(leavesNewObjectsAlone && newObjects.values.contains { $0 === parent }) }
        let chosen = candidates.enumerated().filter { b >> UInt64($0.offset % 40) & 1 == 1 }.prefix(3).map(\.element)
        let chosenRows = chosen.compactMap(row(of:))
        let store = try live
        if engine == .postgres {
            // The children are read synchronously from what the store holds: load them first.
            try await store.async.prefetch([\Item.linkedFrom], of: [parent])
        }
        let value = linkValue(of: parentRow)
        let current = rows(linkingToValue: value)
        // And now and then a copy of a managed item (its key, not its object) among them: the
        // store refuses it (another object has its key), publishes why, and it stays out,
        // pointing nowhere.
        let copy = b % 5 == 4 ? objects.filter { isManaged($0.value) }.keys.min().map { Item(key: $0, values: row(seed: b)) } : nil
        note("set \(parentRow).linkedFrom = [\((chosenRows.map(\.description) + (copy.map { ["a copy of \($0.id ?? 0)"] } ?? [])).joined(separator: ", "))]")
        let errorsBefore = writeErrorsHeard.count
        parent.linkedFrom = chosen + (copy.map { [$0] } ?? [])
        if let copy {
            guard !copy._$tracking.isAttached, copy.link == nil else { throw Divergence(message: "a copy of a managed item joined a to-many: attached \(copy._$tracking.isAttached), pointing at \(String(describing: copy.link?.id))") }
            // (An error an earlier step published may arrive first: wait for this one.)
            await letStreamsCatchUp { writeErrorsHeard.dropFirst(errorsBefore).contains { $0.code == .duplicateKey } }
            guard writeErrorsHeard.dropFirst(errorsBefore).contains(where: { $0.code == .duplicateKey }) else {
                throw Divergence(message: "a copy of a managed item put in a to-many was refused, but writeErrors did not say so")
            }
        }
        let link = Item.Column.link.rawValue
        for row in current where !chosenRows.contains(row) {
            reference.write(.set(.null), column: link, of: row)
            // The store changed its object, which the pending change keeps alive: the program
            // holds it, as the store does.
            if case .key(let key) = row, objects[key] == nil { keysToHold.insert(key) }
        }
        for row in chosenRows where !Values.same(reference.shown(row, keepingLinksToNewRows: true)?[link] ?? .null, value) {
            reference.write(.set(value), column: link, of: row)
        }
    }

    /// A new item's `linkedFrom` is the objects of the rows that link to it: keyed ones in key
    /// order, then new ones in the order they were inserted.
    func checkLinkedFrom(ofNew object: Item, number: Int) throws {
        let found = object.linkedFrom
        let expected = rows(linkingToValue: Reference.keyOfNew(number))
        guard isObjects(found, of: expected) else {
            throw Divergence(message: "new#\(number).linkedFrom is \(found.map { $0.id.map { "\($0)" } ?? "new" }); expected \(expected)")
        }
    }
}

/// New objects related before they are inserted: a graph of items whose links point among
/// themselves (cycles and self-links too) and whose root was given children; inserting the root
/// inserts everything it reaches.
extension Harness {
    /// Inserts the root of up to three new items with keys no row or object has: the store
    /// inserts what the root's link reaches, link by link, and the children its `linkedFrom`
    /// was given (which link to it).
    func insertGraph(_ a: UInt64, _ b: UInt64) throws {
        let store = try live
        // A key looks free while an earlier insert waits for the key the database assigns,
        // which may be that very key: two objects would claim one row, which the reference
        // does not model here (single keyed inserts model it).
        let waitsForAKey = reference.units.contains { unit in unit.operations.contains { if case .insert(.new, _) = $0 { true } else { false } } }
        guard !waitsForAKey else { return }
        var random = Xoshiro(seed: a ^ (b << 5))
        var keys: [Int64] = []
        for _ in 0..<12 where keys.count < Int(a % 3) + 1 {
            let key = insertedKey(seed: random.next() % 1_000_000)
            guard !keys.contains(key), reference.shown(.key(key)) == nil, reference.file[key] == nil, objects[key] == nil,
                  store.registrar.identityMap.object(table: 0, shownAs: .integer(key)) == nil, !released.contains(key)
            else { continue }
            keys.append(key)
        }
        var rows: [[SQLValue]] = []
        for key in keys {
            // Values the database takes: the insert is the subject here, not a refusal.
            guard var values = (0..<8).lazy.map({ _ in self.row(seed: random.next() % 1_000_000) }).first(where: { self.reference.refusal(of: $0) == nil }) else { return }
            values[0] = .integer(key)
            values[Item.Column.link.rawValue] = .null
            rows.append(values)
        }
        guard !keys.isEmpty else { return }
        let items = zip(keys, rows).map { Item(key: $0, values: $1) }
        var links: [Int?] = items.indices.map { _ in random.chance(2, in: 3) ? Int(random.next() % UInt64(items.count)) : nil }
        for (index, link) in links.enumerated() { if let link { items[index].link = items[link] } }
        let children = (1..<items.count).filter { _ in random.chance(1, in: 2) }
        if !children.isEmpty {
            items[0].linkedFrom = children.map { items[$0] }
            for child in children { links[child] = 0 }
        }
        // What inserting the root reaches: links, and the root's children.
        var reached: [Int] = [0]
        var next = 0
        while next < reached.count {
            let index = reached[next]
            next += 1
            for other in ([links[index]].compactMap { $0 } + (index == 0 ? children : [])) where !reached.contains(other) {
                reached.append(other)
            }
        }
        note("insert a graph: " + items.indices.map { index in
            "\(keys[index])\(links[index].map { " → \(keys[$0])" } ?? "")\(reached.contains(index) ? "" : " (not reached)")"
        }.joined(separator: ", "))
        let before = store.pendingChanges.count
        try store.insert(items[0])
        // In the order the store queued them (targets first, children last), so that the
        // reference's units are the store's.
        let queued = store.pendingChanges.dropFirst(before).compactMap { change in
            keys.firstIndex { change.operations.first?.hasPrefix("insert into items: id = \($0),") == true }
        }
        guard Set(queued) == Set(reached) else {
            throw Divergence(message: "inserting the graph queued the inserts of \(queued.map { keys[$0] }); the root reaches \(reached.map { keys[$0] })")
        }
        for index in queued {
            var values = rows[index]
            values[Item.Column.link.rawValue] = links[index].map { .integer(keys[$0]) } ?? .null
            reference.insert(.key(keys[index]), values: values)
            objects[keys[index]] = items[index]
        }
        for index in items.indices where !reached.contains(index) && items[index]._$tracking.isAttached {
            throw Divergence(message: "inserting the graph inserted \(keys[index]), which the root does not reach")
        }
    }

    /// Points an item at an object another store manages: refused, the link left as it was
    /// (the error it publishes on `writeErrors` is pinned by `RelationshipMisuseTests`);
    /// inserting a new item that points at it throws and inserts nothing.
    func relateToAnotherStore(_ a: UInt64) async throws {
        guard let object = pickHeld(a), isManaged(object) else { return }
        var configuration = Self.configuration
        configuration.createsMissingTables = true
        let foreignStore = try ModelStore(.inMemory, models: [Item.self], configuration: configuration)
        let foreign = Item(key: 1, values: [.integer(1), .text("foreign"), .integer(0), .null, .real(0), .null, .integer(0), .null])
        try foreignStore.insert(foreign)
        let store = try live
        note("relate \(row(of: object).map(\.description) ?? "?").link to another store's object (refused)")
        let before = object.link
        object.link = foreign
        guard object.link === before else { throw Divergence(message: "relating to another store's object was accepted") }
        let new = Item(key: nil, values: row(seed: a))
        new.link = foreign
        do {
            try store.insert(new)
            throw Divergence(message: "inserting an item that points at another store's object was accepted")
        } catch let error as StoreError where error.code == .notAttached {
            if new._$tracking.isAttached { throw Divergence(message: "a refused insert left the item attached") }
        }
        try await foreignStore.close()
        // And a copy of a managed item (its key, not its object): the store would have to insert
        // it, and refuses, saying why on writeErrors; the link stays as it was.
        guard let key = objects.filter({ isManaged($0.value) }).keys.min() else { return }
        let copy = Item(key: key, values: row(seed: a))
        note("relate \(row(of: object).map(\.description) ?? "?").link to a copy of \(key) (refused)")
        let errorsBefore = writeErrorsHeard.count
        object.link = copy
        guard object.link === before, !copy._$tracking.isAttached else { throw Divergence(message: "relating to a copy of a managed item was accepted") }
        // (The error of the relation to another store's object may arrive first: wait for this one.)
        await letStreamsCatchUp { writeErrorsHeard.dropFirst(errorsBefore).contains { $0.code == .duplicateKey } }
        guard writeErrorsHeard.dropFirst(errorsBefore).contains(where: { $0.code == .duplicateKey }) else {
            throw Divergence(message: "relating to a copy of a managed item was refused, but writeErrors did not say so")
        }
    }
}

extension Harness {
    /// Whether items are the objects of rows, in order: a keyed row's by key, a new row's the
    /// program's object.
    func isObjects(_ items: [Item], of rows: [Reference.RowID]) -> Bool {
        items.count == rows.count && zip(items, rows).allSatisfy { item, row in
            switch row {
            case .key(let key): item.id == key
            case .new(let number): item === newObjects[number]
            }
        }
    }
}
