import Foundation
@testable import TrackedModels

/// Reads the database fails (an I/O error at the read): the error is thrown, or, where a
/// property cannot throw or the store read of its own accord (later, awaited from a server),
/// published on `writeErrors`, and never turned into an answer that looks whole.
extension Harness {
    /// One read, the database failing it: a to-many shows the children the store holds
    /// objects for (a part of the answer, in its order) and publishes the error; `fetch`,
    /// `fetchCount` and `find` of a row not loaded throw it. A read the store answers from its
    /// objects alone asks nothing of the database and answers in full. Nothing changes: the
    /// checks after the step find the store as it was.
    func readThatFails(_ a: UInt64) async throws {
        let store = try live
        let injected = SQLiteError(code: .ioError, message: "injected I/O error").storeError
        // On PostgreSQL the program's reads are awaited, and throw what they meet; what the
        // store reads there of its own accord (later, awaited) is case 3.
        guard engine == .sqlite || a % 5 == 3 else { return }
        switch a % 5 {
        case 0:
            // Mostly a row no object shows yet: the store has not read its children (a to-many
            // read once is kept current from then on, and asks nothing of the database).
            let unread = reference.shownRows.keys.sorted().filter { store.registrar.identityMap.object(table: 0, shownAs: .integer($0)) == nil }
            let fresh = a / 4 % 4 != 0 && !unread.isEmpty ? try store.find(Item.self, key: unread[Int(a / 16 % UInt64(unread.count))]) : nil
            guard let object = fresh ?? pickHeld(a / 4).flatMap({ isManaged($0) ? $0 : nil }), let key = object.id else { return }
            note("read \(key).linkedFrom, the database failing the read")
            let errorsBefore = writeErrorsHeard.count
            readFault.arm(injected)
            let found = object.linkedFrom
            let expected = rows(linkingTo: key)
            guard readFault.take() == nil else {
                note("(answered without the database)")
                guard isObjects(found, of: expected) else { throw Divergence(message: "row \(key).linkedFrom, read from objects alone, is \(found.map(\.id)); expected \(expected)") }
                return
            }
            try checkPart(found, of: expected, key: key)
            let published = { self.writeErrorsHeard.dropFirst(errorsBefore).contains { $0.message.contains("injected I/O error") } }
            await letStreamsCatchUp(until: published)
            guard published() else {
                throw Divergence(message: "reading row \(key).linkedFrom failed, but writeErrors did not say so")
            }
        case 1:
            note("fetch every item, the database failing the read")
            try expectFailure("fetch") { _ = try store.fetch(FetchDescriptor<Item>()) }
        case 2:
            note("count every item, the database failing the read")
            try expectFailure("fetchCount") { _ = try store.fetchCount(FetchDescriptor<Item>()) }
        case 3:
            // A change whose delivery reads (live lists judging the rows it touched, their
            // joins' targets): every list must still agree with the reference after it.
            guard let object = pickHeld(a / 5), isManaged(object) else { return }
            note("the database fails the next read:")
            let errorsBefore = writeErrorsHeard.count
            let anyStale = isAnyListStale
            readFault.arm(injected)
            assignPlainColumn(of: object, seed: a / 25)
            if engine == .postgres { try await mendAfterAFailedLaterRead(a / 125, errorsBefore: errorsBefore, mustBeTold: !anyStale) }
            readFault.arm(nil)
        default:
            let key = insertedKey(seed: a / 4)
            guard store.registrar.identityMap.object(table: 0, shownAs: .integer(key)) == nil else { return }
            note("find(\(key)), the database failing the read")
            try expectFailure("find(\(key))") { _ = try store.find(Item.self, key: key) }
        }
    }

    /// Another connection's change, heard while the database fails the next read: a live list
    /// that must read to judge a row it touched (or to reload, after a change of the whole
    /// table) reads again later; once the store settles every list agrees with the reference.
    func externalChangeHeardWhileAReadFails(_ a: UInt64, _ b: UInt64) async throws {
        if a % 3 == 0 { try await externalReset(a / 3, b) } else { try await externalUpdate(a / 3, b) }
        note("(heard while the database fails the next read)")
        let errorsBefore = writeErrorsHeard.count
        let anyStale = isAnyListStale
        readFault.arm(SQLiteError(code: .ioError, message: "injected I/O error").storeError)
        defer { readFault.arm(nil) }
        try await live.refreshExternalChanges()
        // A reload a reset started may fail while a later one (a list joined to its own table
        // hears the reset twice) is already under way: that failure leaves nothing out of date,
        // and says nothing.
        if engine == .postgres { try await mendAfterAFailedLaterRead(b / 7, errorsBefore: errorsBefore, mustBeTold: a % 3 != 0 && !anyStale) }
    }

    /// Every pending change discarded while the database fails the next reads (on PostgreSQL
    /// one to three of those it makes later; on SQLite two: a read that fails at once is made
    /// again later). What the discard reads back
    /// later (rows it brought back or whose changes it undid) says on `writeErrors` that it
    /// could not: that is checked where nothing else reads then (no live list, no watched
    /// to-many). The objects it could not read back may still show the discarded changes, so
    /// the program closes the store and opens it again, which reads everything afresh.
    ///
    /// Half the time a held object is deleted first: the discard brings its row back, and must
    /// read it to say so.
    func discardEveryChangeWhileAReadFails(_ a: UInt64) async throws {
        let store = try live
        if a / 3 % 2 == 0 {
            madeSeveralChanges = true
            try await deleteAwaited(a / 6)
            syncAttachment()
        }
        guard !store.pendingChanges.isEmpty else { return }
        let times = engine == .sqlite ? 2 : Int(a % 3) + 1
        note("the database fails the next \(times == 1 ? "read" : "\(times) reads")\(engine == .sqlite ? " (at once, and again later)" : ""):")
        let errorsBefore = writeErrorsHeard.count
        let injected = SQLiteError(code: .ioError, message: "injected I/O error").storeError
        readFault.arm(injected, times: times)
        defer { readFault.arm(nil) }
        try discardPending()
        try await store.refreshExternalChanges()
        let left = readFault.disarm()
        let failed = left < times
        let published = { self.writeErrorsHeard.dropFirst(errorsBefore).contains { $0.message.contains("injected I/O error") } }
        let mustBeTold = left == 0 && engine == .postgres && lists.isEmpty && generatedLists.allSatisfy { $0 == nil } && groups.isEmpty && linkedFromWatches.isEmpty
        if mustBeTold { await letStreamsCatchUp(until: published) }
        guard published() || !mustBeTold else { throw Divergence(message: "a read the discard made later failed, but writeErrors did not say so") }
        guard failed else { return note("(no read needed the database)") }
        try await reopen()
    }

    /// Whether a live list is already out of date (a read the server refused): one that fails
    /// again says nothing new.
    private var isAnyListStale: Bool {
        (lists.map(\.results) + generatedLists.compactMap { $0 }).contains { $0.isStale }
    }

    /// On PostgreSQL the reads a delivery needs are made later, awaited. Once they are placed,
    /// the one the fault failed (if any needed the database) must have said so on
    /// `writeErrors` where `mustBeTold`; a live list it left out of date reads its rows again
    /// at its next change, here an insert every list hears, and must agree with the reference
    /// after it.
    private func mendAfterAFailedLaterRead(_ seed: UInt64, errorsBefore: Int, mustBeTold: Bool) async throws {
        try await live.refreshExternalChanges()
        guard readFault.take() == nil else { return note("(no read needed the database)") }
        let published = { self.writeErrorsHeard.dropFirst(errorsBefore).contains { $0.message.contains("injected I/O error") } }
        if mustBeTold { await letStreamsCatchUp(until: published) }
        guard published() || !mustBeTold else { throw Divergence(message: "a read the store made later failed, but writeErrors did not say so") }
        note("then, heard by every live list:")
        try insertNew(seed)
    }

    /// Runs a read with the fault armed: it must throw the injected error, unless it asked
    /// nothing of the database (the fault is still armed then).
    private func expectFailure(_ read: String, _ body: () throws -> Void) throws {
        readFault.arm(SQLiteError(code: .ioError, message: "injected I/O error").storeError)
        defer { readFault.arm(nil) }
        do {
            try body()
            if readFault.take() == nil { throw Divergence(message: "\(read) returned, though the database failed its read") }
            note("(answered without the database)")
        } catch let error as StoreError {
            guard error.message.contains("injected I/O error") else { throw error }
        }
    }

    /// What a to-many shows when the read of its children failed: the children the store
    /// holds objects for, each a child the reference has, in the reference's order, among
    /// them every child the program holds.
    private func checkPart(_ found: [Item], of expected: [Reference.RowID], key: Int64) throws {
        var rest = expected[...]
        for item in found {
            guard let position = rest.firstIndex(where: { row in
                switch row {
                case .key(let key): item.id == key
                case .new(let number): item === newObjects[number]
                }
            }) else {
                throw Divergence(message: "row \(key).linkedFrom, its read failed, shows \(item.id.map { "\($0)" } ?? "a new item") out of \(expected)")
            }
            rest = rest[(position + 1)...]
        }
        for row in expected {
            let held: Item? = switch row {
            case .key(let key): objects[key]
            case .new(let number): newObjects[number]
            }
            if let held, !found.contains(where: { $0 === held }) {
                throw Divergence(message: "row \(key).linkedFrom, its read failed, leaves out \(row), whose object the program holds")
            }
        }
    }
}
