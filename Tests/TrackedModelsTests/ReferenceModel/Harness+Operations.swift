import Foundation
import Logging
import PropertyBased
import Testing
@testable import TrackedModels

/// The operations of a generated program, each applied to the store and to the reference.
extension Harness {
    private struct Abort: Error {}

    /// Decodes and runs one step, then lets the store settle (its worker's replies delivered).
    func run(_ step: Step) async throws {
        let refusedBefore = reference.units.count(where: \.isRefused)
        let warningsBefore = log.records(at: .warning).count
        let publishedBefore = writeErrorsHeard.count
        defer {
            // A change the database refused is a warning in the log, naming it.
            if reference.units.count(where: \.isRefused) > refusedBefore, log.records(at: .warning).count == warningsBefore {
                logGap = "a change the database refused was not logged as a warning"
            }
        }
        mayReset = false
        madeSeveralChanges = false
        collidingKeys = []
        replacedKeys = []
        switch step.kind {
        case 0..<18:
            try await loadLinkTarget(step.a, step.b)
            try assign(step.a, step.b)
        case 18..<20: release(step.a)
        case 20..<27: try increment(step.a, step.b)
        case 27..<31: try await load(step.a)
        case 31..<33: try await makeLiveList(step.a)
        case 33..<38: try insertKeyed(step.a, step.b)
        case 38..<42: try insertNew(step.b)
        case 42..<45:
            try await loadChildren(ofDeleted: step.a)
            try delete(step.a)
        case 45..<47: try await deleteAwaited(step.a)
        case 47..<49: try await deleteAllAwaited()
        case 49..<56: try transaction(step.a, step.b, depth: 0)
        case 56..<61: try await flush(awaitingAKey: step.a % 3 == 0)
        case 61..<64: try await flushWithChangesInFlight(step.a, step.b)
        case 64..<66: try await reopen()
        case 66: try await (engine == .sqlite ? releaseStore() : reopen())
        case 67..<70: try discardRefused()
        case 70..<73: try fixRefused()
        case 73..<81: try await externalUpdate(step.a, step.b)
        case 81..<83: try await externalRekey(step.a, step.b)
        case 83..<87: try await externalInsert(step.a, step.b)
        case 87..<89: try await externalDelete(step.a)
        case 89..<91: try await externalReplace(step.a, step.b)
        case 145: try await externalInsertUnlessTaken(step.a, step.b)
        case 146: try await externalUpsert(step.a, step.b)
        case 147: try await externalReplace(step.a, step.b, byConflict: true)
        case 148: try await externalChangeWhileTheLogIsAway(step.a, step.b)
        case 149: try await externalChangeWhileTheTableIsAltered(step.a, step.b)
        case 150: try moveLiveWindow(step.a, step.b)
        case 151: try transaction(step.a, step.b, depth: 0, body: { try self.passThroughAFreshGroup(step.a, step.b) })
        case 152: try await copyTheDatabase(step.a)
        case 153: try await (engine == .sqlite ? faultyFlush(step.a) : flushWhoseConnectionEnds(step.a))
        case 154: try await externalInsertThenChange(step.a, step.b)
        case 155: try await deleteAwaitedWhileTheProgramWrites(step.a, step.b)
        case 91..<93: try await (engine == .sqlite ? busyFlush() : flushAfterLostConnections())
        case 93..<95: try await bulkInsert(step.a, step.b)
        case 95..<100: try await faultyFlush(step.a)
        case 100..<104: try subscribeFeed(step.a, step.b)
        case 104: try await cancelFeed(step.a)
        case 105..<108: try await assignChildren(step.a, step.b)
        case 108..<110: try discardPending()
        case 110..<113: try insertGraph(step.a, step.b)
        case 113: try await relateToAnotherStore(step.a)
        case 114..<117: try discardLast()
        case 117: try await fetchWithUntranslatableDescriptor(step.a)
        case 118: try await externalReset(step.a, step.b)
        case 120..<122: try discardAny(step.a)
        case 122..<125: try await readThatFails(step.a)
        case 125..<128: try takeBackDeleteThenChange(step.a, step.b)
        case 128: try insertTheNextRowID(step.b)
        case 129 where engine == .sqlite: try transaction(step.a, step.b, depth: 0, body: { try self.deleteAListedRowAndReadTheList(step.a) })
        case 130: try await flushWithChangesInFlight(step.a, step.b, incrementingAgain: true)
        case 131: try await flushWithChangesInFlight(step.a, step.b, failingFirst: true)
        case 132: try await changeBesideARefusal(step.a, step.b)
        // A transaction that deletes every row (each through the delete rule of `linkedFrom`)
        // and throws: all of it comes back.
        case 133: try transaction(step.a, step.b | 1, depth: 0, body: { try self.deleteAll() })
        // SQLite only: PostgreSQL takes a round trip per row, seconds for these.
        case 134 where engine == .sqlite: try await bulkInsertRefusedAtItsEnd(step.a)
        case 135: try await externalDeleteUnderARefusal(step.a)
        case 136: try await externalChangeHeardWhileAReadFails(step.a, step.b)
        case 137: try await flushWithChangesInFlight(step.a, step.b, holding: .afterItsCommit)
        case 138: try await flushWithChangesInFlight(step.a, step.b, holding: .beforeItsCommit)
        case 139: try await discardEveryChangeWhileAReadFails(step.a)
        case 140: try await insertOverAFileRowThenDiscard(step.a, step.b)
        // Rare paths given a second kind (with one, some runs at CI's budget reached them and
        // some did not): a to-many whose read fails, a refused change outliving its row,
        // discards whose reads back fail, a bulk insert that waits for room.
        case 141: try await readThatFails(step.a / 5 * 5)
        case 142: try await externalDeleteUnderARefusal(step.a)
        case 143: try await discardEveryChangeWhileAReadFails(step.a)
        case 144 where engine == .sqlite: try await bulkInsertRefusedAtItsEnd(step.a)
        default: try insertManyKeyed(step.a, step.b)
        }
        syncAttachment()
        // And each is published on writeErrors.
        let refused = reference.units.count(where: \.isRefused) - refusedBefore
        if refused > 0 {
            await letStreamsCatchUp { writeErrorsHeard.count - publishedBefore >= refused }
            if writeErrorsHeard.count - publishedBefore < refused {
                throw Divergence(message: "\(refused) changes the database refused (\(reference.units.compactMap(\.refusal).joined(separator: "; "))), but writeErrors published \(writeErrorsHeard.count - publishedBefore) errors")
            }
        }
        // The objects a delete rule made, which their pending changes keep alive: the program
        // holds them, as the store does.
        for key in keysToHold where objects[key] == nil {
            if let found = try await find(key) { hold(found) }
        }
        keysToHold = []
        if let store { try await store.refreshExternalChanges() }
        recordHandlerWrites()
    }

    // MARK: - The program's changes

    /// A generated value. On PostgreSQL, text holds no NUL: the server takes none, and a
    /// pending one would make every read of the table fail (left alone, in issue 17's note).
    func value(for column: Item.Column, seed: UInt64) -> SQLValue {
        withoutNUL(Values.value(for: column, seed: seed))
    }

    func row(seed: UInt64) -> [SQLValue] {
        Values.row(seed: seed).map(withoutNUL)
    }

    private func withoutNUL(_ value: SQLValue) -> SQLValue {
        guard engine == .postgres, case .text(let text) = value, text.unicodeScalars.contains("\0") else { return value }
        return .text(String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\0" ? "0" : $0 })))
    }

    func assign(_ a: UInt64, _ b: UInt64) throws {
        guard let object = pickHeld(a) else { return }
        let column = Item.Column.assignable[Int(b % UInt64(Item.Column.assignable.count))]
        // A third of assignments relate, so that programs build links and change linked rows.
        guard column != .link, b % 3 != 0 else { return try relate(object, b / 8) }
        let value = value(for: column, seed: b / 8)
        let row = row(of: object)
        note("set \(row.map { "\($0)" } ?? "detached object \(object.id.map { "\($0)" } ?? "nil")").\(column) \(value.describedExactly)")
        let managed = isManaged(object)
        let before = object._$values()[column.rawValue]
        object.assign(value, to: column)
        // The setter stores nothing when the value is the same stored value.
        if managed, let row, !Values.same(before, value) {
            reference.write(.set(value), column: column.rawValue, of: row)
        }
        recordHandlerWrites()
    }

    /// A row passes through a section and group no row is in (a `count` or `note` of its own),
    /// and back, in one burst: the sections and grouped aggregates keyed by that column see a
    /// group come and go before anyone is told of it, and tell nobody.
    func passThroughAFreshGroup(_ a: UInt64, _ b: UInt64) throws {
        guard let object = pickHeld(a), isManaged(object), let row = row(of: object) else { return }
        let column: Item.Column = b % 2 == 0 ? .count : .note
        let before = object._$values()[column.rawValue]
        let fresh: SQLValue = column == .count ? .integer(2_000_000 + Int64(b % 1_000)) : .text("passing \(b % 1_000)")
        guard !Values.same(before, fresh) else { return }
        note("set \(row).\(column) \(fresh.describedExactly), then back to \(before.describedExactly)")
        object.assign(fresh, to: column)
        reference.write(.set(fresh), column: column.rawValue, of: row)
        recordHandlerWrites()
        object.assign(before, to: column)
        reference.write(.set(before), column: column.rawValue, of: row)
        recordHandlerWrites()
    }

    /// Sets a column of a managed object that is not its link (which may read the database to
    /// find its target).
    func assignPlainColumn(of object: Item, seed: UInt64) {
        guard let row = row(of: object) else { return }
        let columns = Item.Column.assignable.filter { $0 != .link }
        let column = columns[Int(seed % UInt64(columns.count))]
        let value = value(for: column, seed: seed / 8)
        note("set \(row).\(column) \(value.describedExactly)")
        let before = object._$values()[column.rawValue]
        object.assign(value, to: column)
        if !Values.same(before, value) { reference.write(.set(value), column: column.rawValue, of: row) }
        recordHandlerWrites()
    }

    /// A row changed, then deleted; the program takes back the delete (the row shows again,
    /// without an object: the deleted one stays detached), then the change, which subscribers
    /// of a row no object shows hear cell by cell.
    func takeBackDeleteThenChange(_ a: UInt64, _ b: UInt64) throws {
        let held = heldObjects
        guard !held.isEmpty else { return }
        let object = held[Int(a % UInt64(held.count))]
        guard isManaged(object), case .key = row(of: object) else { return }
        // Subscribers hear each change, and then each undone: nothing in all.
        madeSeveralChanges = true
        assignPlainColumn(of: object, seed: b)
        try delete(a)
        syncAttachment()
        try discardLast()
        try discardLast()
    }

    /// A row of the file that the program inserts again with its key (the database would
    /// refuse that insert at the commit), deletes, and takes the delete back: the insert shows
    /// the row, but no object does. The store is checked there (the insert of a key the file
    /// holds is heard as a new row, which the checks let pass), and what follows checked in
    /// full: now and then `find` makes an object of the row; then the insert is discarded
    /// (alone, or with every pending change): the row shows what the file holds again, and its
    /// subscribers hear only the cells that differ, from what they were told.
    func insertOverAFileRowThenDiscard(_ a: UInt64, _ b: UInt64) async throws {
        let store = try live
        let changed = Set(reference.units.flatMap(\.changedKeys))
        let candidates = reference.file.keys.sorted().filter { key in
            store.registrar.identityMap.object(table: 0, shownAs: .integer(key)) == nil && !changed.contains(key) && !reference.inserts(.key(key))
        }
        guard !candidates.isEmpty else { return }
        let key = candidates[Int(a % UInt64(candidates.count))]
        try insertKeyed(key, b)
        guard let object = objects[key], let index = heldObjects.firstIndex(where: { $0 === object }) else { return }
        madeSeveralChanges = true
        try await loadChildren(ofDeleted: UInt64(index))
        try delete(UInt64(index))
        // (A delete the store refused, for a link to a new object, leaves the insert alone.)
        guard reference.shown(.key(key)) == nil else { return }
        syncAttachment()
        try discardLast()
        try await check()
        (mayReset, madeSeveralChanges, collidingKeys, replacedKeys) = (false, false, [], [])
        if b % 3 == 0 { try await load(key: key, awaited: b % 2 == 0) }
        if b % 5 == 0 { try discardPending() } else { try discardLast() }
    }

    /// A value for `link`: mostly the key of a row the program shows, so that changes of
    /// linked rows matter, else any key, or NULL.
    private func linkValue(seed: UInt64) -> SQLValue {
        let shown = reference.shownRows.keys.sorted()
        guard seed % 4 != 0, !shown.isEmpty else { return Values.value(for: .link, seed: seed / 4) }
        return .integer(shown[Int(seed / 4 % UInt64(shown.count))])
    }

    /// Before an assignment that relates, holds the object of the key it relates to, as
    /// `relate` would find it: PostgreSQL is asked here, where the program can await.
    private func loadLinkTarget(_ a: UInt64, _ b: UInt64) async throws {
        let column = Item.Column.assignable[Int(b % UInt64(Item.Column.assignable.count))]
        guard column == .link || b % 3 == 0, pickHeld(a) != nil, case .integer(let key) = linkValue(seed: b / 8), objects[key] == nil else { return }
        if let found = try await find(key) { hold(found) }
    }

    /// Points an object's `link` at the item of a key (the object the program holds, else the
    /// one `find` gives), at nothing when there is none, or (a fifth of the time) at an object
    /// whose key the database has yet to assign. Inside a transaction on PostgreSQL, where
    /// `find` cannot await the server, a key the store does not hold is left alone.
    private func relate(_ object: Item, _ seed: UInt64) throws {
        var target: Item?
        var value = SQLValue.null
        let new = newObjects.keys.sorted().filter { reference.shown(.new($0)) != nil }
        let unlinkedDetached = detached.filter {
            $0._$relatedObject(column: Item.Column.link.rawValue) == nil && object._$relatedObject(column: Item.Column.link.rawValue) !== $0
        }
        if seed % 7 == 6, transactionDepth == 0, !unlinkedDetached.isEmpty {
            return try relate(object, toDetached: unlinkedDetached[Int(seed / 7 % UInt64(unlinkedDetached.count))])
        }
        if seed % 5 == 4, !new.isEmpty {
            return link(object, toNew: new[Int(seed / 5 % UInt64(new.count))])
        }
        if case .integer(let key) = linkValue(seed: seed) {
            if let held = objects[key] {
                target = held
            } else if let found = try findWithoutWaiting(key) {
                target = found
            } else {
                return note("relate skipped: \(key) is not loaded, and a transaction cannot wait for the server")
            }
            if let target { hold(target) }
            value = target?.id.map { SQLValue.integer($0) } ?? .null
        }
        link(object, to: target, value: value)
    }

    /// Points an object's `link` at a new object whose key the database has yet to assign.
    private func link(_ object: Item, toNew number: Int) {
        link(object, to: newObjects[number], value: Reference.keyOfNew(number))
    }

    /// Points an object's `link` at `target`, whose key (or stand-in for the key to come) is
    /// `value`.
    func link(_ object: Item, to target: Item?, value: SQLValue) {
        let row = row(of: object)
        note("relate \(row.map { "\($0)" } ?? "detached object \(object.id.map { "\($0)" } ?? "nil")").link to \(Reference.newRow(linkedBy: value).map { "new#\($0)" } ?? value.describedExactly)")
        let managed = isManaged(object)
        let before = row.flatMap { reference.shown($0, keepingLinksToNewRows: true)?[Item.Column.link.rawValue] }
        object.link = target
        if managed, let row, let before, !Values.same(before, value) {
            reference.write(.set(value), column: Item.Column.link.rawValue, of: row)
        }
    }

    /// Points an object's `link` at an object the store no longer manages (deleted, or whose
    /// insert was discarded or taken back), which does not point anywhere: the store inserts it
    /// again with its values (a new row where it has no key), unless the store has another
    /// object of its key; then it refuses (publishing the error) and nothing changes.
    private func relate(_ object: Item, toDetached target: Item) throws {
        let row = row(of: object)
        let values = target._$values()
        note("relate \(row.map { "\($0)" } ?? "detached object \(object.id.map { "\($0)" } ?? "nil")").link to the detached object \(target.id.map { "\($0)" } ?? "nil")")
        let store = try live
        // The column already holds the target's key (its row not loaded): nothing to assign.
        let link = Item.Column.link.rawValue
        if object._$relatedObject(column: link) == nil, let key = target.id, object._$tracking.foreignKeys[link] == .integer(key) {
            return note("(the link holds \(key) already: nothing changes)")
        }
        // Refused while the store has another object of its key (one the program may not hold
        // any more: a fetch's, kept alive by a list or a pending change).
        let refused = target.id.map { store.registrar.identityMap.object(table: 0, shownAs: .integer($0)) != nil } ?? false
        let before = object.link
        let managed = isManaged(object)
        object.link = target
        guard object._$tracking.isAttached else { return }
        if refused {
            if object.link !== before { throw Divergence(message: "relating to a detached object whose key the store has was accepted") }
            return
        }
        guard object.link === target, target._$tracking.isAttached else {
            throw Divergence(message: "relating to a detached object did not insert it again")
        }
        detached.removeAll { $0 === target }
        let value: SQLValue
        if let key = target.id {
            if reference.shown(.key(key)) != nil { collidingKeys.insert(key) }
            reference.insert(.key(key), values: values)
            objects[key] = target
            value = .integer(key)
        } else {
            let new = reference.newRow()
            reference.insert(new, values: values)
            if case .new(let number) = new { newObjects[number] = target }
            value = Reference.keyOfNew(reference.lastNewNumber)
        }
        if managed, let row { reference.write(.set(value), column: link, of: row) }
    }

    /// The program lets go of an object it holds for a row: the store still manages the row,
    /// and keeps the object alive as long as its changes are pending, no longer.
    func release(_ a: UInt64) {
        let keys = objects.keys.sorted()
        guard !keys.isEmpty else { return }
        let key = keys[Int(a % UInt64(keys.count))]
        note("release the object of \(key)")
        objects[key] = nil
        linkedFromWatches[key] = nil
        titleWatches[key] = nil
        released.insert(key)
    }

    func increment(_ a: UInt64, _ b: UInt64) throws {
        let store = try live
        guard let object = pickHeld(a) else { return }
        var random = Xoshiro(seed: b)
        let delta: Int
        if b == 0 {
            delta = 1
        } else if random.chance(1, in: 6) {
            delta = Int(Values.integer(&random))
        } else {
            delta = Int(random.next() % 21) - 10
        }
        let row = row(of: object)
        note("increment \(row.map { "\($0)" } ?? "detached object").count by \(delta)")
        let managed = isManaged(object)
        let (_, overflow) = object.count.addingReportingOverflow(delta)
        do {
            try store.increment(\Item.count, of: object, by: delta)
            guard managed, !overflow, let row else {
                throw Divergence(message: "increment of \(row.map { "\($0)" } ?? "a detached object") by \(delta) was accepted; expected \(overflow ? "an overflow error" : "notAttached")")
            }
            if delta != 0 { reference.write(.add(Int64(delta)), column: Item.Column.count.rawValue, of: row) }
            recordHandlerWrites()
        } catch let error as StoreError {
            if managed, !overflow { throw Divergence(message: "increment threw \(error) for a managed object") }
        }
    }

    /// The most live lists a program keeps (their checks are fetches of their own).
    static let maximumLists = 8

    /// The program makes a live list of one of its queries, kept and checked from now on.
    func makeLiveList(_ a: UInt64) async throws {
        guard lists.count < Self.maximumLists else { return }
        let index = Int(a % UInt64(queries.count))
        note("make a live list (\(queries[index].name))")
        let store = try live
        lists.append(LiveList(query: index, results: engine == .sqlite ? try store.results(for: queries[index].descriptor) : try await store.async.results(for: queries[index].descriptor), streamed: a / 7 % 2 == 1))
    }

    /// The same inside a transaction, where the program cannot await: on PostgreSQL, which it
    /// would have to ask, it is skipped.
    func makeLiveListWithoutWaiting(_ a: UInt64) throws {
        guard lists.count < Self.maximumLists else { return }
        let index = Int(a % UInt64(queries.count))
        note("make a live list (\(queries[index].name))")
        do {
            lists.append(LiveList(query: index, results: try live.results(for: queries[index].descriptor), streamed: a / 7 % 2 == 1))
        } catch let error as StoreError where needsServer(error) {
            return
        }
    }

    func load(_ a: UInt64, awaited: Bool = false) async throws {
        try await load(key: Values.key(seed: a), awaited: awaited)
    }

    func load(key: Int64, awaited: Bool = false) async throws {
        note("find \(key)\(awaited && engine == .sqlite ? ", awaited" : "")")
        guard let found = try await find(key, awaited: awaited) else { return }
        hold(found)
        // Prefetching what is not a relationship is refused, saying what to name.
        do {
            try await live.async.prefetch([\Item.title], of: [found])
            throw Divergence(message: "prefetching a column was accepted")
        } catch let error as StoreError where error.code == .unsupportedPredicate {}
    }

    /// - Parameter inTransaction: Whether the insert is made inside a transaction. There a key
    ///   another connection holds (and the program does not) is not inserted: the store does
    ///   not read the file on insert, so a transaction that inserts such a key and deletes it
    ///   nets to nothing for subscribers and live lists, which keep the other connection's row
    ///   (a known limit, in the closing note of issue 14). Outside one, such inserts are made.
    func insertKeyed(_ a: UInt64, _ b: UInt64, inTransaction: Bool = false) throws {
        if a % 16 == 15, let held = pickHeld(b), isManaged(held) { return try insertAgain(held) }
        try insertKeyed(insertedKey(seed: a), b, inTransaction: inTransaction)
    }

    /// An insert of the key SQLite is about to give a row inserted without one (past every
    /// key the program shows or the file holds), while such a row waits: at the commit the
    /// later of the two is refused, and the other's object keeps the row.
    func insertTheNextRowID(_ b: UInt64) throws {
        let largest = (Array(reference.file.keys) + Array(reference.shownRows.keys)).max() ?? 0
        guard engine == .sqlite, !newObjects.isEmpty, largest < .max else { return }
        try insertKeyed(largest + 1, b)
    }

    func insertKeyed(_ key: Int64, _ b: UInt64, inTransaction: Bool = false) throws {
        if inTransaction, objects[key] == nil, reference.shown(.key(key)) != nil { return }
        var values = row(seed: b)
        values[0] = .integer(key)
        let object = Item(key: key, values: values)
        note("insert \(key): \(values.map(\.describedExactly).joined(separator: ", "))")
        // Live results hold an object for each of their rows that was read (the checks read
        // every element; on PostgreSQL they hold one for every row, which they cannot read
        // later without waiting): the store manages one, and a second is refused too.
        let store = try live
        // (A list keeps the object of a member its window moved past.)
        let managedByLists = ((lists.map(\.results) + generatedLists.compactMap { $0 }).contains { $0.holdsObject(ofKey: .integer(key)) }
            || groups.contains { $0.holdsObject(.integer(key)) })
            && store.registrar.identityMap.object(table: 0, shownAs: .integer(key)) != nil
        // An object the program let go of may still be alive (its changes pending, or a held
        // object's link caching it): the store manages it until it goes away.
        let releasedButAlive = released.contains(key) && store.registrar.identityMap.object(table: 0, shownAs: .integer(key)) != nil
        let hasObject = objects[key] != nil || isHeldThroughLinks(key) || managedByLists || releasedButAlive
        do {
            try live.insert(object)
            if hasObject { throw Divergence(message: "inserting a second object for key \(key) was accepted") }
            if reference.shown(.key(key)) != nil { collidingKeys.insert(key) }
            reference.insert(.key(key), values: values)
            objects[key] = object
        } catch let error as StoreError where error.code == .duplicateKey {
            if !hasObject { throw Divergence(message: "insert \(key) threw duplicateKey, but no object of that key is held") }
        }
    }

    /// The program inserts an object the store has already: refused with `duplicateKey`, and
    /// nothing changes (inside a transaction, the transaction throws it).
    private func insertAgain(_ object: Item) throws {
        note("insert the stored object of row \(row(of: object).map { "\($0)" } ?? "?") again")
        do {
            try live.insert(object)
            throw Divergence(message: "inserting an object the store has already was accepted")
        } catch let error as StoreError where error.code == .duplicateKey && error.message.contains("already stored") {}
    }

    /// More keyed rows than a read walks one by one (``QueuedRowIndex/Slot/walkedBelow``
    /// operations), in a range of keys of their own, as one `insert(contentsOf:)`: a
    /// transaction's unit, whose rows every later read finds through the index while they are
    /// pending.
    func insertManyKeyed(_ a: UInt64, _ b: UInt64) throws {
        let store = try live
        let count = QueuedRowIndex.Slot.walkedBelow + Int(a % 32)
        let first = (Int64(1) << 30) + Int64(transcript.count) * 1_000
        let keys = (0..<Int64(count)).map { first + $0 }
        guard !keys.contains(where: { objects[$0] != nil || store.registrar.identityMap.object(table: 0, shownAs: .integer($0)) != nil }) else { return }
        let rows = keys.enumerated().map { offset, key in
            var values = row(seed: b &+ UInt64(offset))
            values[0] = .integer(key)
            return values
        }
        note("insert(contentsOf:) \(count) rows, keys \(first)…\(first + Int64(count) - 1)")
        let items = zip(keys, rows).map { Item(key: $0, values: $1) }
        try store.insert(contentsOf: items)
        let snapshot = reference.beginTransaction()
        for (key, values) in zip(keys, rows) {
            if reference.shown(.key(key)) != nil { collidingKeys.insert(key) }
            reference.insert(.key(key), values: values)
        }
        reference.endTransaction(succeeded: true, restoring: snapshot)
        for (key, item) in zip(keys, items) { objects[key] = item }
    }

    /// A key the program or another connection inserts. On PostgreSQL not the largest two:
    /// the store moves the key sequence past the keys in the table, and a sequence at its end
    /// assigns no more keys (the insert is refused, naming the sequence).
    func insertedKey(seed: UInt64) -> Int64 {
        let key = Values.key(seed: seed)
        return engine == .postgres && key >= .max - 1 ? 1 << 40 : key
    }

    func insertNew(_ b: UInt64) throws {
        let values = row(seed: b)
        let object = Item(key: nil, values: values)
        let row = reference.newRow()
        // Now and then as a sequence of one: the same insert, in a transaction of its own.
        let asSequence = b % 5 == 0
        note("insert\(asSequence ? "(contentsOf: [...])" : "") \(row) (key by SQLite): \(values.dropFirst().map(\.describedExactly).joined(separator: ", "))")
        if asSequence { try live.insert(contentsOf: [object]) } else { try live.insert(object) }
        reference.insert(row, values: values)
        if case .new(let number) = row { newObjects[number] = object }
    }

    /// Before a delete, loads the children its delete rule applies to, as `delete` would read
    /// them: PostgreSQL is asked here, where the program can await.
    private func loadChildren(ofDeleted a: UInt64) async throws {
        let held = heldObjects
        guard engine == .postgres, !held.isEmpty else { return }
        let object = held[Int(a % UInt64(held.count))]
        guard object._$tracking.isAttached else { return }
        try await live.async.prefetch([\Item.linkedFrom], of: [object])
    }

    /// Whether the store must ask PostgreSQL, which the program cannot await inside a
    /// transaction: the operation changed nothing, and the program goes on without it.
    private func needsServer(_ error: StoreError) -> Bool {
        // Outside a transaction the program awaits what the store needs: no skip there.
        guard error.code == .asyncReadRequired, transactionDepth > 0 else { return false }
        note("skipped: it needs the server, which a transaction cannot wait for")
        return true
    }

    /// A delete about to be made: the object, its row, and whether the store must take it.
    struct PlannedDelete {
        let object: Item
        let row: Reference.RowID?
        let deletable: Bool
    }

    private func planDelete(_ a: UInt64) -> PlannedDelete? {
        let held = heldObjects
        guard !held.isEmpty else { return nil }
        let object = held[Int(a % UInt64(held.count))]
        let row = row(of: object)
        note("delete \(row.map { "\($0)" } ?? "detached object")")
        let deletable: Bool = if case .key? = row { isManaged(object) } else { false }
        return PlannedDelete(object: object, row: row, deletable: deletable)
    }

    /// Whether the delete rule refuses to delete a row: a row links to it while its insert waits
    /// for its key.
    private func isRefusedForNewLinks(_ planned: PlannedDelete) -> Bool {
        guard planned.deletable, case .key(let key)? = planned.row else { return false }
        return rows(linkingTo: key).contains { if case .new = $0 { true } else { false } }
    }

    /// Deletes a held object, as the program does inside a transaction (or with its rows read).
    func delete(_ a: UInt64) throws {
        guard let planned = planDelete(a) else { return }
        try finish(planned, Result { try live.delete(planned.object) })
    }

    /// Deletes a held object through `store.async`, which reads what the delete rule needs.
    ///
    /// - Parameters:
    ///   - write: What the program writes while the delete waits for the database (another
    ///     task's work, as in an app), at the delete's `read(planned)`-th awaited read, if it
    ///     makes that many.
    func deleteAwaited(_ a: UInt64, meanwhile write: ((PlannedDelete) throws -> Void)? = nil, atRead read: (PlannedDelete) -> Int = { _ in 1 }) async throws {
        guard let planned = planDelete(a) else { return }
        let store = try live
        if let write { interleavedWrite.arm(atRead: read(planned)) { try write(planned) } }
        var outcome: Result<Void, any Error>
        do {
            try await store.async.delete(planned.object)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        if write != nil, try !interleavedWrite.disarm() { note("(the delete awaited fewer reads: nothing written meanwhile)") }
        try finish(planned, outcome)
    }

    /// Checks a delete's outcome against the reference, and keeps it there.
    private func finish(_ planned: PlannedDelete, _ outcome: Result<Void, any Error>) throws {
        // After what the program wrote while an awaited delete waited.
        let refusedForNewLinks = isRefusedForNewLinks(planned)
        switch outcome {
        case .failure(let error as StoreError) where error.code == .notAttached || needsServer(error):
            if planned.deletable, !refusedForNewLinks, error.code == .notAttached { throw Divergence(message: "delete of a managed object threw \(error)") }
            return
        case .failure(let error):
            throw error
        case .success:
            break
        }
        guard planned.deletable, case .key(let key)? = planned.row else {
            throw Divergence(message: "deleting \(planned.row.map { "\($0)" } ?? "a detached object") was accepted")
        }
        if refusedForNewLinks { throw Divergence(message: "deleting row \(key), which a new item links to, was accepted") }
        // The delete rule of `linkedFrom` (nullify): the rows that link to the deleted one
        // link to nothing, in the delete's unit.
        let snapshot = reference.beginTransaction()
        let nullified = rows(linkingTo: key).filter { $0 != .key(key) }
        for other in nullified {
            reference.write(.set(.null), column: Item.Column.link.rawValue, of: other)
        }
        reference.delete(.key(key))
        reference.endTransaction(succeeded: true, restoring: snapshot)
        // The rule made an object of each of those rows, which its pending change keeps
        // alive: the program holds them now, as the store does.
        for case .key(let other) in nullified where objects[other] == nil { keysToHold.insert(other) }
    }

    /// The rows that show a link to a key: keyed ones by key, then new ones by insert.
    func rows(linkingTo key: Int64) -> [Reference.RowID] {
        let link = Item.Column.link.rawValue
        let keyed = reference.shownRows.filter { $0.value[link] == .integer(key) }.keys.sorted().map { Reference.RowID.key($0) }
        let new = newObjects.keys.sorted().filter { reference.shown(.new($0))?[link] == .integer(key) }.map { Reference.RowID.new($0) }
        return keyed + new
    }

    /// Every row goes, unless an insert waits for the key the database assigns: the delete
    /// rule needs it, and the store refuses ("flush first"), changing nothing.
    func deleteAll() throws {
        note("deleteAll")
        do {
            try live.deleteAll(Item.self)
        } catch let error as StoreError where error.code == .notAttached && !newObjects.isEmpty || needsServer(error) {
            return
        }
        try didDeleteAll()
    }

    /// A deleteAll outside a transaction: awaited on PostgreSQL, whose delete rule reads rows.
    ///
    /// - Parameter write: What the program writes while the delete waits for the server, at
    ///   its `read`-th awaited read, if it makes that many.
    func deleteAllAwaited(meanwhile write: (() throws -> Void)? = nil, atRead read: Int = 1) async throws {
        guard engine == .postgres else { return try deleteAll() }
        note("deleteAll (awaited)")
        if let write { interleavedWrite.arm(atRead: read, write) }
        var outcome: Result<Void, any Error> = .success(())
        do {
            try await triedAgainWhileBusy { try await live.async.deleteAll(Item.self) }
        } catch {
            outcome = .failure(error)
        }
        if write != nil, try !interleavedWrite.disarm() { note("(the delete awaited fewer reads: nothing written meanwhile)") }
        do {
            try outcome.get()
        } catch let error as StoreError where error.code == .notAttached && !newObjects.isEmpty {
            return
        }
        try didDeleteAll()
    }

    /// Runs an awaited operation, and again (up to twice) when it says the data kept changing
    /// under its reads and to try again (busy, may pass), as a program would: a read that does
    /// not settle three times running is reported.
    private func triedAgainWhileBusy(_ operation: () async throws -> Void) async throws {
        for attempt in 1...3 {
            do {
                return try await operation()
            } catch let error as StoreError where error.code == .busy && error.mayPass && attempt < 3 {
                note("busy, tried again: \(error.message)")
            }
        }
    }

    private func didDeleteAll() throws {
        if !newObjects.isEmpty { throw Divergence(message: "deleteAll was accepted while an insert waits for its key") }
        reference.deleteAll()
        mayReset = true
    }

    /// A transaction of a few operations decoded from `a` and `b`, which throws at its end when
    /// `b` is odd; nested ones come from the same numbers.
    /// - Parameter body: What the transaction does; by default one to four operations drawn
    ///   from `a` and `b`.
    func transaction(_ a: UInt64, _ b: UInt64, depth: Int, body: (() throws -> Void)? = nil) throws {
        let store = try live
        var random = Xoshiro(seed: a ^ (b << 1))
        let throwing = b % 2 == 1
        let count = Int(random.next() % 4) + 1
        note("\(String(repeating: "  ", count: depth))transaction {\(throwing ? " (throws at its end)" : "")")
        let snapshot = reference.beginTransaction()
        let saved = (objects, newObjects, detached)
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        let deletedAll = mayReset
        let eventsBefore = events.count
        let fedBefore = Set(linkedFromWatches.filter { $0.value.fed.value }.keys)
        do {
            try store.transaction {
                if let body { try body() }
                for _ in 0..<(body == nil ? count : 0) {
                    let inner = random.next() % 12
                    let x = random.next() % 1_000_000, y = random.next() % 1_000_000
                    switch inner {
                    case 0..<4: try assign(x, y)
                    case 4..<6: try increment(x, y)
                    case 6: try insertKeyed(x, y, inTransaction: true)
                    case 7: try delete(x)
                    case 8: try deleteAll()
                    case 9: try (y % 2 == 0 ? makeLiveListWithoutWaiting(x) : subscribeFeed(x, y))
                    case 10: try readListsInsideATransaction()
                    default: if depth < 2 { try transaction(x, y, depth: depth + 1) }
                    }
                    syncAttachment()
                }
                if throwing { throw Abort() }
            }
            reference.endTransaction(succeeded: true, restoring: snapshot)
            if depth == 0 { recordHandlerWrites() }
        } catch is Abort {
            reference.endTransaction(succeeded: false, restoring: snapshot)
            (objects, newObjects, detached) = saved
            // Nothing of a transaction that throws is heard by a feed: not the table's, not a
            // `.children` feed of any item (Observation heard its changes as they were made).
            if depth == 0 {
                if events.count != eventsBefore {
                    throw Divergence(message: "a transaction that threw was heard: \(events[eventsBefore...].map { "\($0.kind) \($0.key)" })")
                }
                if let key = linkedFromWatches.first(where: { $0.value.fed.value && !fedBefore.contains($0.key) })?.key {
                    throw Divergence(message: "a transaction that threw was heard by a feed of row \(key).linkedFrom")
                }
            }
            // Objects made inside the failed level are left out of the store.
            mayReset = deletedAll
        }
        note("\(String(repeating: "  ", count: depth))}")
    }

    /// Inside a transaction: makes a live list, deletes a row it lists, and reads every list's
    /// elements. The list hears the delete when the transaction ends, so the element of that
    /// row (which the list has not made yet) is the deleted object, detached, as it was then.
    private func deleteAListedRowAndReadTheList(_ a: UInt64) throws {
        let listsBefore = lists.count
        try makeLiveListWithoutWaiting(a)
        guard lists.count > listsBefore, let listed = lists.last?.results.keys else { return }
        let held = heldObjects
        if let index = held.indices.first(where: { isManaged(held[$0]) && held[$0].id.map(listed.contains) == true }) {
            try delete(UInt64(index))
            syncAttachment()
        }
        try readListsInsideATransaction()
    }

    /// Reads every element of every live list inside a transaction, as a view redrawn in one
    /// would (SQLite's: reads there are answered at once). A list hears the transaction's
    /// changes when it ends: an element is its row's object, or, for a row the transaction
    /// deleted, a detached object of the row as it was.
    private func readListsInsideATransaction() throws {
        guard engine == .sqlite else { return }
        note("read every live list's elements")
        for results in lists.map(\.results) + generatedLists.compactMap({ $0 }) {
            for (position, key) in results.keys.enumerated() {
                let element = results[position]
                guard let key else { continue }
                guard element.id == key else { throw Divergence(message: "a live list's element \(position) is row \(element.id.map { "\($0)" } ?? "nil"), its keys say \(key)") }
                let isShown = reference.shown(.key(key)) != nil
                guard element._$tracking.isAttached == isShown else {
                    throw Divergence(message: "a live list's element for row \(key) is \(isShown ? "detached, but the row is there" : "attached, but the transaction deleted the row")")
                }
            }
        }
    }

    func flush() async throws {
        note("flush")
        let statistics = try live.writerStatistics
        let file = reference.file
        try await flush(failing: nil)
        // The worker's counts only grow, and a flush that changed the file committed rows.
        let now = try live.writerStatistics
        if now.commits < statistics.commits || now.rowStatements < statistics.rowStatements || now.rejectedChanges < statistics.rejectedChanges {
            throw Divergence(message: "the writer's statistics went back: \(statistics) then \(now)")
        }
        if !Self.sameRows(file, reference.file), now.commits == statistics.commits || now.rowStatements == statistics.rowStatements {
            throw Divergence(message: "the flush changed the file, but the writer's statistics count no commit of rows: \(statistics) then \(now)")
        }
    }

    /// A flush, or, where the program holds an object whose key the database has yet to
    /// assign, `committedKey(of:)` of it: a flush that answers the key the object then shows.
    func flush(awaitingAKey: Bool) async throws {
        guard awaitingAKey, let number = newObjects.keys.sorted().first(where: { isManaged(newObjects[$0]!) }), let object = newObjects[number] else {
            return try await flush()
        }
        note("committedKey(of: \(Reference.RowID.new(number)))")
        var key: Int64?
        try await flush(failing: nil) {
            key = try await $0.committedKey(of: object)
        }
        if let key, key != object.id { throw Divergence(message: "committedKey(of:) answered \(key), but the object shows \(object.id.map { "\($0)" } ?? "nil")") }
    }

    /// A flush that the program does not await at once: its changes go to the worker, the
    /// program makes a few more (to objects whose insert is in flight too), then awaits it.
    ///
    /// Objects whose key the database assigns are left alone while an insert the program gave
    /// a key is pending: the database may give a new row that very key, and then two objects
    /// claim one row. The store keeps what the new one's object was changed in flight behind
    /// the refused insert, the keyed object shows its own values, and the reference cannot
    /// say which object the row is (a known limit, in issue 27's note).
    ///
    /// - Parameter incrementingAgain: Whether the flush takes an increment of a counter, which
    ///   the program then increments again while it is in flight (the first commit's counter
    ///   value shows with the second increment on top until that commits too).
    /// - Parameter failingFirst: Whether the commit in flight meets an I/O error: its changes
    ///   are handed back, in front of those made meanwhile.
    /// - Parameter holding: Where the worker is held at the commit in flight, while the
    ///   program goes on: after it (released once the program made its changes: what the
    ///   store reads meanwhile holds the commit), or just before it (released by a timer: the
    ///   program reads a row, that read waits for the commit to end, and the flush is awaited).
    func flushWithChangesInFlight(
        _ a: UInt64, _ b: UInt64, incrementingAgain: Bool = false, failingFirst: Bool = false, holding point: CommitHold.Point? = nil
    ) async throws {
        let store = try live
        if incrementingAgain { try increment(a, b) }
        note("flush\(failingFirst ? " that meets an I/O error at its commit" : ""), and while it is in flight:")
        // Armed only where the submit takes something: else the flush below would meet it.
        let failing = failingFirst && reference.hasPendingUnits
        if failing { fault.arm(SQLiteError(code: .ioError, message: "injected I/O error").storeError) }
        defer { fault.arm(nil) }
        // Or the worker waits at the commit while the program goes on.
        let holding = reference.hasPendingUnits ? point : nil
        if let holding { commitHold.arm(holding) }
        defer { commitHold.release() }
        store.writeBehind.submit(retryingRejected: true)
        let held = holding != nil && commitHold.waitUntilHeld(timeout: .seconds(10))
        reference.unitsTakenForCommit()
        switch held ? holding : nil {
        case .afterItsCommit?: note("(its commit is in the database; the store has yet to hear so)")
        case .beforeItsCommit?:
            note("(its commit is about to be made, for 50 ms)")
            commitHold.release(after: .milliseconds(50))
            try await load(a, awaited: a % 2 == 0)
            // The read waited for the commit, and the store may have heard of it meanwhile:
            // the program makes no more changes while it is in flight.
            note("(the flush is awaited)")
            return try await flush(failing: nil)
        case nil: break
        }
        leavesNewObjectsAlone = reference.units.contains { unit in unit.operations.contains { if case .insert(.key, _) = $0 { true } else { false } } }
        defer { leavesNewObjectsAlone = false }
        var random = Xoshiro(seed: a ^ (b << 2))
        let changes = Int(random.next() % 3) + 1
        madeSeveralChanges = changes > 1 || incrementingAgain
        if incrementingAgain { try increment(a, random.next()) }
        for _ in 0..<changes {
            let x = random.next() % 1_000_000, y = random.next() % 1_000_000
            switch random.next() % 8 {
            case 0, 1: try increment(x, y)
            case 2 where !leavesNewObjectsAlone: try insertNew(y)
            case 3: try transaction(x, y, depth: 0)
            case 4...5 where !leavesNewObjectsAlone && !reference.newRowsInFlight.isEmpty:
                // A new row pointed at one whose insert is in flight: the commit gives the
                // link its key while the row still waits for its own.
                let targets = reference.newRowsInFlight.filter { newObjects[$0] != nil && reference.shown(.new($0)) != nil }
                try insertNew(y)
                guard let number = newObjects.keys.max(), !targets.isEmpty, let object = newObjects[number] else { break }
                link(object, toNew: targets[Int(x % UInt64(targets.count))])
            default: try assign(x, y)
            }
        }
        // And now and then it gives up on what it changed meanwhile: subscribers hear the
        // change, then that it is undone. (Not while a change refused for good is pending: the
        // flush leaves it behind, and the reference counts it among those taken.)
        switch reference.units.contains(where: \.isRefusedForGood) ? 7 : random.next() % 8 {
        case 0, 2:
            madeSeveralChanges = true
            try discardLast()
        case 1:
            madeSeveralChanges = true
            try discardPending()
        default: break
        }
        commitHold.release()
        note("(the flush is awaited)")
        // A flush made while a commit is in flight answers for it: it throws that commit's
        // error, and every change stays pending.
        try await flush(failing: failing ? .atCommit : nil)
    }

    /// A bulk insert of more rows than can wait between the program and the worker at once
    /// (four chunks of 2,048; it sends eight and three rows, so that the program waits for
    /// room while the worker inserts), the last with the first's key: the database refuses it at its end,
    /// and nothing of it stays, nor of the changes pending before it (committed in its
    /// transaction), which stay pending.
    func bulkInsertRefusedAtItsEnd(_ a: UInt64) async throws {
        let store = try live
        var seed = a
        var template = row(seed: seed)
        while reference.refusal(of: reference.declaration.stored(template)) != nil {
            seed &+= 1
            template = row(seed: seed)
        }
        // Keys past those the program uses (a PostgreSQL INTEGER key holds them too).
        let keys = (0..<(8 * 2_048 + 2)).map { Int64(1_500_000_000 + $0) } + [1_500_000_000]
        let rows = keys.map { key in
            var values = template
            values[0] = .integer(key)
            return values
        }
        note("bulkInsert of \(rows.count) rows like (\(template.dropFirst().map(\.describedExactly).joined(separator: ", "))), keys 1500000000…, the last with the first's key")
        var thrown: (any Error)?
        do {
            try await store.bulkInsert(contentsOf: try rows.map { values in Item(key: try Int64(sqlValue: values[0]), values: values) })
        } catch {
            thrown = error
        }
        var trial = reference
        guard trial.bulkInsert(rows, fileKeys: try await fileKeys(), keyOf: { number in newObjects[number]?.id }) != nil else {
            throw Divergence(message: "the reference takes a bulk insert whose last row has its first row's key")
        }
        guard thrown != nil else { throw Divergence(message: "a bulk insert whose last row has its first row's key succeeded") }
        reference = trial
    }

    /// Where a flush's commit fails, if it does.
    private enum Failure {
        /// At its start: the write lock is another connection's (or, on PostgreSQL, its
        /// connection ends before the database refused anything).
        case atBegin
        /// At its end, after its writes (a fault injected just before COMMIT).
        case atCommit
    }

    private func flush(failing failure: Failure?, by flushing: (ModelStore) async throws -> Void = { try await $0.flush() }) async throws {
        try await flush(failingIf: { failure }, by: flushing)
    }

    /// A flush, and how it fails as `failure` says once it is made.
    private func flush(failingIf failure: () async throws -> Failure?, by flushing: (ModelStore) async throws -> Void = { try await $0.flush() }) async throws {
        let store = try live
        let before = store.pendingChanges
        var thrown: (any Error)?
        do { try await flushing(store) } catch { thrown = error }
        // What handlers wrote while the flush ran (told of a discard made meanwhile, say) was
        // taken by the flush's last commit, as the reference's flush takes it.
        recordHandlerWrites()
        let failure = try await failure()
        // A change the flush committed can no longer be discarded: refused, saying so.
        if let committed = before.first(where: { change in !store.pendingChanges.contains { $0.id == change.id } }) {
            do {
                try store.discard(committed)
                throw Divergence(message: "discarding \(committed), which the flush committed, was accepted")
            } catch let error as StoreError where error.code == .notPending {}
        }
        if Self.tracing { print("    flushed\(thrown.map { " (threw \($0))" } ?? ""); pending: \(store.pendingChanges.map { "\($0)" })") }
        if let failure {
            let throwing = switch failure {
            case .atBegin: reference.hasPendingUnits
            case .atCommit: reference.flushFailingAtCommit(fileKeys: try await fileKeys()) { number in newObjects[number]?.id }
            }
            if thrown == nil, throwing { throw Divergence(message: "flush succeeded though its commit failed") }
            if let thrown, !throwing { throw Divergence(message: "flush threw \(thrown) with nothing to commit") }
            return
        }
        let outcome = reference.flush(fileKeys: try await fileKeys()) { number in newObjects[number]?.id }
        nameNewRows()
        if !outcome.problems.isEmpty { throw Divergence(message: outcome.problems.joined(separator: "; ")) }
        if outcome.refused, thrown == nil { throw Divergence(message: "flush succeeded, but a change the database refuses is pending") }
        if !outcome.refused, let thrown { throw Divergence(message: "flush threw \(thrown), but every change can commit") }
    }

    /// A bulk insert of up to three rows (keys often taken, values sometimes refused): it
    /// commits them with every pending change, or nothing.
    func bulkInsert(_ a: UInt64, _ b: UInt64) async throws {
        let store = try live
        var random = Xoshiro(seed: a ^ (b << 3))
        let rows = (0..<Int(random.next() % 4)).map { _ in
            var values = row(seed: random.next() % 1_000_000)
            values[0] = .integer(insertedKey(seed: random.next() % 1_000_000))
            return values
        }
        // And now and then cancelled before it starts (its task waits for the main actor): it
        // sends no row, rolls back, and leaves every pending change pending.
        let cancelled = a % 8 == 3
        note("bulkInsert\(cancelled ? ", cancelled at once," : "") \(rows.map { "(\($0.map(\.describedExactly).joined(separator: ", ")))" }.joined(separator: " "))")
        var items = try rows.map { values in Item(key: try Int64(sqlValue: values[0]), values: values) }
        // And now and then given, last, an object it cannot take: one already stored, or a new
        // one pointing at an object not stored with a key. Refused, naming it; nothing changes.
        var misuse: StoreError.Code?
        if !cancelled, a % 8 == 5 {
            if let held = pickHeld(b), isManaged(held), b % 2 == 0 {
                misuse = .duplicateKey
                items.append(held)
                note("… and the stored object of row \(row(of: held).map { "\($0)" } ?? "?")")
            } else {
                misuse = .notAttached
                let item = Item(key: nil, values: row(seed: b / 8))
                item.link = newObjects.values.first { isManaged($0) && $0.id == nil } ?? Item(key: nil, values: row(seed: b / 64))
                items.append(item)
                note("… and a new item linked to an object not stored with a key")
            }
        }
        var thrown: (any Error)?
        do {
            if cancelled {
                let insert = Task { try await store.bulkInsert(contentsOf: items) }
                insert.cancel()
                try await insert.value
            } else {
                try await store.bulkInsert(contentsOf: items)
            }
        } catch {
            thrown = error
        }
        if thrown is CancellationError {
            guard cancelled else { throw Divergence(message: "bulkInsert threw CancellationError, but its task was not cancelled") }
            note("cancelled: nothing committed, every pending change stays pending")
            return
        }
        if let misuse {
            // The changes pending before it commit first in its transaction: one the database
            // refuses fails it as ever; else the object it cannot take does, and it rolls back.
            var trial = reference
            if trial.bulkInsert([], fileKeys: try await fileKeys(), keyOf: { number in newObjects[number]?.id }) != nil {
                guard thrown != nil else { throw Divergence(message: "bulkInsert succeeded, but a pending change is refused") }
                reference = trial
                return
            }
            guard let error = thrown as? StoreError, error.code == misuse else {
                throw Divergence(message: "bulkInsert of an object it cannot take threw \(thrown.map { "\($0)" } ?? "nothing"); expected \(misuse)")
            }
            return
        }
        var trial = reference
        let refusal = trial.bulkInsert(rows, fileKeys: try await fileKeys()) { number in newObjects[number]?.id }
        if let thrown, refusal == nil, takesAssignedKey(thrown, bulkRows: rows) {
            note("bulkInsert refused: a row's key is one the sequence gave a pending insert of the same commit (the README's documented case); nothing changed")
            return
        }
        reference = trial
        if let thrown, refusal == nil { throw Divergence(message: "bulkInsert threw \(thrown), but everything can commit") }
        if thrown == nil, let refusal { throw Divergence(message: "bulkInsert succeeded, but \(refusal)") }
        guard refusal == nil else { return }
        nameNewRows()
        mayReset = true
    }

    /// Whether a bulk insert was refused for a row whose key PostgreSQL's sequence gave an
    /// insert without a key pending before it: its sequence catches up with the keys the table
    /// and the pending inserts hold, not with rows still to be streamed (as the README says).
    /// The reference cannot tell which key the sequence gives, so this refusal is allowed.
    private func takesAssignedKey(_ error: any Error, bulkRows: [[SQLValue]]) -> Bool {
        guard engine == .postgres, let error = error as? StoreError, error.constraint == .primaryKey,
              reference.units.flatMap(\.operations).contains(where: { if case .insert(.new, _) = $0 { true } else { false } })
        else { return false }
        return bulkRows.contains { error.message.contains("inserting row \($0[0].describedExactly) into") }
    }

    /// Gives inserts the keys SQLite assigned (as their objects show them).
    private func nameNewRows() {
        for (number, object) in newObjects.sorted(by: { $0.key < $1.key }) {
            guard let key = object.id else { continue }
            reference.name(number, key: key)
            newObjects[number] = nil
            // Another object of this key (an insert the database now refuses) keeps the row,
            // also one the program let go of that its pending insert keeps alive, and so does
            // a pending insert of the key whose object the program deleted (and the delete
            // discarded): it shows the row without an object.
            let releasedButAlive = released.contains(key) && store?.registrar.identityMap.object(table: 0, shownAs: .integer(key)).map { $0 !== object } == true
            if objects[key] == nil, !releasedButAlive, !reference.inserts(.key(key)) { objects[key] = object } else { detached.append(object) }
        }
        syncAttachment()
    }

    func reopen() async throws {
        note("close and reopen")
        let store = try live
        // What handlers wrote earlier in the step is pending: close() commits it.
        recordHandlerWrites()
        do {
            try await store.close()
        } catch {
            let outcome = reference.flush(fileKeys: try await fileKeys()) { number in newObjects[number]?.id }
            nameNewRows()
            if !outcome.refused { throw Divergence(message: "close() threw \(error), but every change can commit") }
            return
        }
        let outcome = reference.flush(fileKeys: try await fileKeys()) { number in newObjects[number]?.id }
        nameNewRows()
        if !outcome.problems.isEmpty { throw Divergence(message: outcome.problems.joined(separator: "; ")) }
        if outcome.refused { throw Divergence(message: "close() succeeded, but a change the database refuses is pending") }
        letGoOfTheStore()
        guard try await open() else { throw Divergence(message: "the store did not open again") }
        mayReset = true
    }

    /// Drops everything the program held of the store: its objects (detached from now on),
    /// lists, feeds (an object related again later is watched anew) and the store itself.
    private func letGoOfTheStore() {
        detached += heldObjects
        objects = [:]
        newObjects = [:]
        token = nil
        lists = []
        feeds = []
        generatedLists = []
        aggregates = []
        groups = []
        waitingRowToken = nil
        linkedFromWatches = [:]
        titleWatches = [:]
        store = nil
        events = []
    }

    /// The program lets go of the store without `close()`: everything made before commits on
    /// its own (the store hands it to its worker as it goes away), what the database refuses is
    /// lost with it, and the objects never learn keys the database assigned. The program opens
    /// a store again once the worker is done. SQLite only: the reference cannot tell which keys
    /// a PostgreSQL sequence gave rows whose objects never learned them, nor which random keys
    /// SQLite gave them once the largest key is taken (then the program closes the store).
    func releaseStore() async throws {
        guard !reference.mayAssignRandomKeys else { return try await reopen() }
        note("let go of the store without close(), then open it again")
        let worker = try live.worker
        // What handlers wrote earlier in the step is pending, and goes with the store.
        recordHandlerWrites()
        letGoOfTheStore()
        await worker.closed()
        _ = reference.flush(fileKeys: try await fileKeys()) { _ in nil }
        reference.forgetPending()
        guard try await open() else { throw Divergence(message: "the store did not open again") }
        mayReset = true
    }

    func discardRefused() throws {
        let store = try live
        guard let refused = store.pendingChanges.first(where: { $0.error != nil }) else {
            if reference.hasRefusedUnits { throw Divergence(message: "no pending change has an error, but the reference has a refused one") }
            return
        }
        note("discard \(refused)")
        try store.discard(refused)
        detachObjects(ofDiscarded: reference.discardFirstRefused())
        recordHandlerWrites()
        // Rows a discarded deleteAll had taken away come back through a reset.
        mayReset = true
    }

    /// The objects of discarded inserts go back to what they were: detached, even where the
    /// file has a row of that key (another connection's). A row a later unit inserts again
    /// belongs to that insert's object.
    private func detachObjects(ofDiscarded inserted: [Reference.RowID]) {
        for row in inserted where !reference.inserts(row) {
            switch row {
            case .key(let key): if let object = objects.removeValue(forKey: key) { detached.append(object) }
            case .new(let number): if let object = newObjects.removeValue(forKey: number) { detached.append(object) }
            }
        }
    }

    /// Gives up on every pending change: objects show what is committed again, objects of
    /// discarded inserts are detached, subscribers hear rows come back.
    func discardPending() throws {
        let store = try live
        guard !store.pendingChanges.isEmpty else { return }
        note("discard every pending change")
        store.discardPendingChanges()
        detachObjects(ofDiscarded: reference.discardPending())
        recordHandlerWrites()
        // Rows a discarded deleteAll had taken away come back through a reset.
        mayReset = true
    }

    /// Gives up on the last pending change (see ``discard(choosing:)``).
    func discardLast() throws {
        try discard { $0.last }
    }

    /// Gives up on any pending change not in flight (see ``discard(choosing:)``): later
    /// changes of the rows it inserted go with it.
    func discardAny(_ a: UInt64) throws {
        try discard { $0[Int(a % UInt64($0.count))] }
    }

    /// Gives up on the pending change `choose` picks among the positions of those not in
    /// flight, where the reference's units are the store's (one for one): its rows show what
    /// was there before it.
    private func discard(choosing choose: ([Int]) -> Int?) throws {
        let store = try live
        let pending = store.pendingChanges
        let waiting = pending.indices.filter { !pending[$0].isInFlight }
        guard !waiting.isEmpty, pending.count == reference.units.count, let index = choose(waiting) else { return }
        note("discard \(index == pending.count - 1 ? "the last" : "the \(index + 1). of \(pending.count)") pending change: \(pending[index])")
        try store.discard(pending[index])
        detachObjects(ofDiscarded: reference.discard(at: index))
        recordHandlerWrites()
        mayReset = true
    }

    /// Assigns a valid value to each cell that makes the first refused change fail.
    /// Changes a cell of a refused change's row that does not fix it: the refused change keeps
    /// its error, and the new change goes into it where it writes the cell, and waits behind it
    /// otherwise (it may not commit ahead of it). With no refused change to change beside, one
    /// is made first: a held row's count set to 13, which the table's CHECK refuses at a flush
    /// (an update refused alone, where most refusals are of inserts).
    func changeBesideARefusal(_ a: UInt64, _ b: UInt64) async throws {
        func refusedKeys() -> [Int64] {
            reference.units.filter(\.isRefused).flatMap(\.changedKeys).filter { objects[$0] != nil }
        }
        var keys = refusedKeys()
        if keys.isEmpty, reference.declaration.hasCountCheck, let object = pickHeld(a), isManaged(object), let row = row(of: object), case .key = row {
            note("set \(row).count 13, which the CHECK refuses")
            let before = object._$values()[Item.Column.count.rawValue]
            object.assign(.integer(13), to: .count)
            if !Values.same(before, .integer(13)) { reference.write(.set(.integer(13)), column: Item.Column.count.rawValue, of: row) }
            recordHandlerWrites()
            try await flush()
            keys = refusedKeys()
        }
        guard !keys.isEmpty, let object = objects[keys[Int(a % UInt64(keys.count))]] else { return }
        assignPlainColumn(of: object, seed: b)
    }

    func fixRefused() throws {
        guard let unit = reference.units.first(where: \.isRefused) else { return }
        for operation in unit.operations {
            guard case .key(let key)? = operation.row, let object = objects[key], let values = reference.shown(.key(key)) else { continue }
            if reference.declaration.hasCountCheck, values[2] == .integer(13) { fix(object, .count, .integer(0)) }
            if reference.declaration.noteIsNotNull, values[3] == .null { fix(object, .note, .text("fixed")) }
            if case .real(let score) = values[4], score.isNaN { fix(object, .score, .real(1.5)) }
            guard let refusal = reference.refusal(of: values) else { continue }
            // PostgreSQL's: NUL in text, text longer than its VARCHAR, an integer its type cannot hold.
            if refusal.hasPrefix("title") || refusal.hasPrefix("NUL in title") { fix(object, .title, .text("fix")) }
            if refusal.hasPrefix("note") || refusal.hasPrefix("NUL in note") { fix(object, .note, .text("fix")) }
            if refusal.hasPrefix("count") { fix(object, .count, .integer(0)) }
        }
        // Another row holds a payload it writes: NULL is never a duplicate.
        if unit.refusal == Reference.duplicatePayload {
            for case .key(let key)? in unit.operations.map(\.row) where reference.shown(.key(key))?[Item.Column.payload.rawValue] != .null {
                if let object = objects[key] { fix(object, .payload, .null) }
            }
        }
    }

    private func fix(_ object: Item, _ column: Item.Column, _ value: SQLValue) {
        guard let row = row(of: object) else { return }
        note("fix \(row).\(column) = \(value.describedExactly)")
        object.assign(value, to: column)
        reference.write(.set(value), column: column.rawValue, of: row)
        recordHandlerWrites()
    }

    func busyFlush() async throws {
        note("flush while another connection holds the write lock")
        guard case .sqlite(let connection) = other else { return }
        try connection.execute("BEGIN IMMEDIATE")
        defer { try? connection.execute("ROLLBACK") }
        try await flush(failing: .atBegin)
    }

    /// PostgreSQL: the server ends the store's connections, then a flush: the store connects
    /// again, and the flush commits as any other.
    func flushAfterLostConnections() async throws {
        note("the server ends the store's connections; flush")
        let ended = try await other.rows("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE 'trackedmodels%'
            """)
        guard ended.first?.first != .integer(0) else { throw Divergence(message: "the store had no connection to end") }
        try await flush(failing: nil)
    }

    /// PostgreSQL: a flush whose transaction loses its connection once, the server ending the
    /// store writer's own backend from a trigger: at `COMMIT` (a deferred trigger, so that the
    /// store must ask the server whether the transaction committed) or in the middle of a
    /// statement. The server rolls the transaction back: the flush throws the lost connection,
    /// every change stays pending in order, and a later flush commits each once, on a new
    /// connection (an increment made twice would show), none lost.
    func flushWhoseConnectionEnds(_ a: UInt64) async throws {
        let atCommit = a % 2 == 0
        note("the server ends the store writer's connection once, \(atCommit ? "at COMMIT" : "in a statement"); flush")
        let fires = atCommit ? "CONSTRAINT TRIGGER ending_the_writers_connection AFTER INSERT OR UPDATE OR DELETE ON items DEFERRABLE INITIALLY DEFERRED"
            : "TRIGGER ending_the_writers_connection AFTER INSERT OR UPDATE OR DELETE ON items"
        try await other.commit([
            ("CREATE SEQUENCE IF NOT EXISTS ending_once", []),
            ("SELECT setval('ending_once', 1, false)", []),
            ("""
            CREATE OR REPLACE FUNCTION end_the_writers_connection() RETURNS trigger LANGUAGE plpgsql AS $f$
            BEGIN
                IF current_setting('application_name') = 'trackedmodels writer' AND nextval('ending_once') = 1 THEN
                    PERFORM pg_terminate_backend(pg_backend_pid());
                END IF;
                RETURN NULL;
            END $f$
            """, []),
            ("CREATE \(fires) FOR EACH ROW EXECUTE FUNCTION end_the_writers_connection()", []),
        ])
        // Where the trigger fired, nothing committed and the flush throws the lost connection
        // (the harness's store does not retry at once), every change pending. At COMMIT, as a
        // commit failing at its end; in a statement, the writes after it never ran, so no
        // refusal is learned either, as when a commit cannot begin.
        var thrown: StoreError.Code?
        try await flush(failingIf: {
            guard await self.other.commits("DROP TRIGGER ending_the_writers_connection ON items", []) else {
                throw Divergence(message: "the other connection could not drop the trigger that ends the writer's connection")
            }
            let ended = try await self.other.rows("SELECT is_called::int FROM ending_once").first?.first == .integer(1)
            if Self.tracing { print("    the connection was \(ended ? "" : "not ")ended") }
            guard ended else { return nil }
            guard thrown == .connectionLost else {
                throw Divergence(message: "the server ended the writer's connection in the flush, which threw \(thrown.map { "\($0)" } ?? "nothing"); expected connectionLost")
            }
            return atCommit ? .atCommit : .atBegin
        }, by: { store in
            do {
                try await store.flush()
            } catch {
                thrown = (error as? StoreError)?.code
                throw error
            }
        })
    }

    /// A flush whose commit fails just before it commits (a full disk, an I/O error, a busy
    /// database): nothing commits, everything stays pending in order, and the next flush
    /// commits it.
    func faultyFlush(_ a: UInt64) async throws {
        let (name, code): (String, ResultCode) = [("disk full", .full), ("I/O error", .ioError), ("busy", .busy)][Int(a % 3)]
        note("flush that meets \(name) at its commit")
        fault.arm(SQLiteError(code: code, message: "injected \(name)").storeError)
        defer { fault.arm(nil) }
        try await flush(failing: .atCommit)
    }

    // MARK: - Another connection's commits

    /// A key of the file: `a` picks among the rows there, or an absent key.
    /// A key for another connection's change: mostly one the file holds, now and then one a
    /// refused change is for (so that rows go away under refused changes), else any.
    private func fileKey(_ a: UInt64) -> Int64 {
        let keys = reference.file.keys.sorted()
        guard !keys.isEmpty, a % 8 != 7 else { return insertedKey(seed: a / 8) }
        let refused = reference.units.filter(\.isRefused).flatMap(\.changedKeys).filter { reference.file[$0] != nil }
        if a % 8 == 5 || a % 8 == 6, !refused.isEmpty { return refused[Int(a / 8 % UInt64(refused.count))] }
        return keys[Int(a / 8 % UInt64(keys.count))]
    }

    private func otherCommits(_ sql: String, _ arguments: [SQLValue]) async -> Bool {
        await other.commits(sql, arguments)
    }

    /// The keys the database holds, read through the other connection.
    func fileKeys() async throws -> Set<Int64> {
        Set(try await other.rows("SELECT id FROM items").compactMap { if case .integer(let key) = $0[0] { key } else { nil } })
    }

    func externalUpdate(_ a: UInt64, _ b: UInt64) async throws {
        try await externalUpdate(key: fileKey(a), b)
    }

    /// Another connection inserts a row, which the store hears of, and then changes or deletes
    /// it before anything holds an object of it (no check ran between, no live form was read):
    /// the store tells subscribers of a row it knows only by its key.
    func externalInsertThenChange(_ a: UInt64, _ b: UInt64) async throws {
        let key = insertedKey(seed: a)
        guard reference.file[key] == nil, reference.shown(.key(key)) == nil, let store else { return }
        try await externalInsert(a, b)
        guard reference.file[key] != nil else { return }
        try await store.refreshExternalChanges()
        // Heard as two changes, which may undo each other.
        madeSeveralChanges = true
        if (a >> 20) % 3 == 0 {
            try await externalDelete(key: key)
        } else {
            try await externalUpdate(key: key, b >> 8)
        }
    }

    private func externalUpdate(key: Int64, _ b: UInt64) async throws {
        let column = Item.Column.assignable[Int(b % UInt64(Item.Column.assignable.count))]
        let value = value(for: column, seed: b / 8)
        note("other connection: UPDATE \(key).\(column) = \(value.describedExactly)")
        // A NaN cannot be bound on SQLite, nor a value its column's type cannot take on
        // PostgreSQL, whether or not the row is there.
        let stored = reference.declaration.stored(value, in: column)
        if value.isNaN && engine == .sqlite || reference.refusal(ofValue: stored, in: column) != nil {
            guard await !otherCommits("UPDATE items SET \"\(column)\" = ? WHERE id = ?", [value, .integer(key)]) else {
                throw Divergence(message: "the other connection bound a NaN")
            }
            return
        }
        let expected = reference.external { rows in
            guard rows[key] != nil else { return true }
            rows[key]![column.rawValue] = stored
            return true
        }
        let committed = await otherCommits("UPDATE items SET \"\(column)\" = ? WHERE id = ?", [value, .integer(key)])
        if committed != expected { throw Divergence(message: "the other connection's update \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    func externalRekey(_ a: UInt64, _ b: UInt64) async throws {
        let key = fileKey(a)
        let newKey = Values.key(seed: b) &+ 1_000
        note("other connection: UPDATE id \(key) → \(newKey)")
        let expected = reference.external { rows in
            guard let values = rows[key], newKey != key else { return true }
            guard rows[newKey] == nil else { return false }
            rows[key] = nil
            rows[newKey] = values
            rows[newKey]![0] = .integer(newKey)
            return true
        }
        let committed = await otherCommits("UPDATE items SET id = ? WHERE id = ?", [.integer(newKey), .integer(key)])
        if committed != expected { throw Divergence(message: "the other connection's re-key \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    func externalInsert(_ a: UInt64, _ b: UInt64) async throws {
        let key = insertedKey(seed: a)
        var values = row(seed: b)
        values[0] = .integer(key)
        values[Item.Column.link.rawValue] = linkValue(seed: b >> 20)
        note("other connection: INSERT \(key): \(values.dropFirst().map(\.describedExactly).joined(separator: ", "))")
        let stored = reference.declaration.stored(values)
        let expected = reference.external(inserting: key) { rows in
            guard rows[key] == nil else { return false }
            rows[key] = stored
            return true
        }
        let committed = await otherCommits("INSERT INTO items (id, title, count, note, score, payload, flag, link_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)
        if committed != expected { throw Divergence(message: "the other connection's insert \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    /// Another connection inserts a row unless its key is taken (`ON CONFLICT DO NOTHING`, or
    /// SQLite's `INSERT OR IGNORE`): a row of that key stays as it was, and is not heard.
    func externalInsertUnlessTaken(_ a: UInt64, _ b: UInt64) async throws {
        let key = a % 2 == 0 ? fileKey(a / 2) : insertedKey(seed: a / 2)
        var values = row(seed: b)
        values[0] = .integer(key)
        let ignoring = engine == .sqlite && b % 2 == 0
        note("other connection: INSERT \(key) \(ignoring ? "OR IGNORE" : "ON CONFLICT DO NOTHING"): \(values.dropFirst().map(\.describedExactly).joined(separator: ", "))")
        let stored = reference.declaration.stored(values)
        // OR IGNORE skips a row a NOT NULL or CHECK constraint refuses too; DO NOTHING only one
        // whose key is taken. (A NaN cannot be bound on SQLite at all.)
        let refused = reference.refusal(of: stored) != nil
        // Either form skips a row whose payload another row holds, where that is `UNIQUE`.
        let inserts = reference.file[key] == nil && !refused && reference.duplicate(of: stored, key: key, in: reference.file) == nil
        // A skipped row's key raises SQLite's AUTOINCREMENT counter all the same.
        let expected = !(engine == .sqlite && values.contains(where: \.isNaN)) && (ignoring || !refused)
            && reference.external(inserting: inserts || engine == .sqlite ? key : nil) { rows in
            if inserts { rows[key] = stored }
            return true
        }
        let columns = "items (id, title, count, note, score, payload, flag, link_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        let committed = await otherCommits(ignoring ? "INSERT OR IGNORE INTO \(columns)" : "INSERT INTO \(columns) ON CONFLICT DO NOTHING", values)
        if committed != expected { throw Divergence(message: "the other connection's insert unless taken \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    /// Another connection changes one cell of a row the file holds by inserting the row as it
    /// is, that cell changed, `ON CONFLICT (id) DO UPDATE` (an UPSERT): heard as that update.
    func externalUpsert(_ a: UInt64, _ b: UInt64) async throws {
        let key = fileKey(a)
        guard var values = reference.file[key] else { return try await externalUpdate(a, b) }
        let column = Item.Column.assignable[Int(b % UInt64(Item.Column.assignable.count))]
        let value = value(for: column, seed: b / 8)
        note("other connection: INSERT \(key) ON CONFLICT (id) DO UPDATE SET \(column) = \(value.describedExactly)")
        let stored = reference.declaration.stored(value, in: column)
        if value.isNaN && engine == .sqlite || reference.refusal(ofValue: stored, in: column) != nil { return }
        values[column.rawValue] = value
        // The row is there, but SQLite's AUTOINCREMENT counter takes the key all the same.
        let expected = reference.refusal(of: reference.declaration.stored(values)) == nil && reference.external(inserting: key) { rows in
            rows[key]![column.rawValue] = stored
            return true
        }
        let sql = "INSERT INTO items (id, title, count, note, score, payload, flag, link_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET \"\(column)\" = excluded.\"\(column)\""
        let committed = await otherCommits(sql, values)
        if committed != expected { throw Divergence(message: "the other connection's upsert \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    /// Another connection deletes a row and inserts one of the same key in one transaction:
    /// another row, whatever the store reads of it at once.
    ///
    /// - Parameter byConflict: On SQLite, as one statement whose conflict resolution deletes the
    ///   row (`INSERT OR REPLACE` or `REPLACE`): no delete trigger fires for it, and the store
    ///   hears it through the rows logged before the insert.
    func externalReplace(_ a: UInt64, _ b: UInt64, byConflict: Bool = false) async throws {
        let key = fileKey(a)
        var values = row(seed: b)
        values[0] = .integer(key)
        // Now and then the payload of another row, where that is `UNIQUE`: a REPLACE deletes
        // that row too (no delete trigger fires for it), a plain insert is refused.
        let payload = Item.Column.payload.rawValue
        let holders = reference.file.filter { $0.key != key && $0.value[payload] != .null }.keys.sorted()
        if reference.declaration.payloadIsUnique, b % 3 == 0, !holders.isEmpty {
            values[payload] = reference.file[holders[Int(a / 7 % UInt64(holders.count))]]![payload]
        }
        let form = byConflict && engine == .sqlite ? (b % 2 == 0 ? "INSERT OR REPLACE" : "REPLACE INTO") : "DELETE and INSERT"
        note("other connection: \(form) \(key): \(values.dropFirst().map(\.describedExactly).joined(separator: ", "))")
        let existed = reference.file[key] != nil
        let expected = reference.externalReplace(key, with: reference.declaration.stored(values), byConflict: form != "DELETE and INSERT")
        let insert = "INTO items (id, title, count, note, score, payload, flag, link_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        let statements: [(String, [SQLValue])] = switch form {
        case "INSERT OR REPLACE": [("INSERT OR REPLACE " + insert, values)]
        case "REPLACE INTO": [("REPLACE " + insert, values)]
        default: [("DELETE FROM items WHERE id = ?", [.integer(key)]), ("INSERT " + insert, values)]
        }
        let committed = (try? await other.commit(statements)) != nil
        if committed != expected { throw Divergence(message: "the other connection's replace \(committed ? "committed" : "failed"); the reference expected otherwise") }
        guard committed, existed else { return }
        // The row is another row now: the object of the old one no longer manages it (unless
        // it is the program's own insert of that key, still pending), and subscribers may hear
        // the new row as a change even where its values are the same.
        if !reference.inserts(.key(key)), let object = objects.removeValue(forKey: key) { detached.append(object) }
        replacedKeys.insert(key)
    }

    func externalDelete(_ a: UInt64) async throws {
        try await externalDelete(key: fileKey(a))
    }

    /// Another connection deletes a row a refused change updates or deletes: the change has no
    /// row left, and is refused for good (trying again could only change another row).
    func externalDeleteUnderARefusal(_ a: UInt64) async throws {
        let keys = reference.units.filter(\.isRefused).flatMap(\.changedKeys).filter { reference.file[$0] != nil }
        guard !keys.isEmpty else { return }
        try await externalDelete(key: keys[Int(a % UInt64(keys.count))])
    }

    private func externalDelete(key: Int64) async throws {
        note("other connection: DELETE \(key)")
        _ = reference.external { rows in
            rows[key] = nil
            return true
        }
        guard await otherCommits("DELETE FROM items WHERE id = ?", [.integer(key)]) else { throw Divergence(message: "the other connection's delete failed") }
    }
}
