import Foundation
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
        note("set \(parentRow).linkedFrom = [\(chosenRows.map(\.description).joined(separator: ", "))]")
        parent.linkedFrom = chosen
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
        let same = found.count == expected.count && zip(found, expected).allSatisfy { item, row in
            switch row {
            case .key(let key): item.id == key
            case .new(let number): item === newObjects[number]
            }
        }
        guard same else {
            throw Divergence(message: "new#\(number).linkedFrom is \(found.map { $0.id.map { "\($0)" } ?? "new" }); expected \(expected)")
        }
    }
}
