@testable import TrackedModels

/// Programs that write while an awaited operation of theirs waits for the database, as an
/// app's other tasks do: the store's actor is free during the await, and what the operation
/// composes or writes once its reads are answered must take the new writes in.
extension Harness {
    /// An awaited delete while the program writes: a held row is related to the row being
    /// deleted, a plain cell is set, or a row is inserted. Mostly at the delete's second read,
    /// where it has one (it reads the rows of the children it found first): a row related then
    /// is a child the delete has not read, which it must read before its rule can nullify the
    /// link.
    func deleteAwaitedWhileTheProgramWrites(_ a: UInt64, _ b: UInt64) async throws {
        if engine == .postgres, a % 3 == 0 { return try await deleteAllAwaitedWhileTheProgramWrites(b) }
        func read(_ planned: PlannedDelete) -> Int {
            guard b % 4 != 0, case .key(let key)? = planned.row, !rows(linkingTo: key).isEmpty else { return 1 }
            return 2
        }
        try await deleteAwaited(a, meanwhile: { [self] planned in
            note("meanwhile, at the delete's read \(read(planned)):")
            switch b / 2 % 4 {
            case 0, 1:
                guard case .key(let key)? = planned.row, planned.deletable else { return note("(nothing: the object is not a stored row)") }
                let children = heldObjects.filter { object in
                    if case .key? = row(of: object) { isManaged(object) } else { false }
                }
                guard !children.isEmpty else { return note("(nothing: no stored row is held)") }
                link(children[Int(b / 8 % UInt64(children.count))], to: planned.object, value: .integer(key))
            case 2:
                guard let object = pickHeld(b / 8), isManaged(object) else { return note("(nothing: the object picked is not a stored row)") }
                assignPlainColumn(of: object, seed: b / 8)
            default:
                try insertKeyed(insertedKey(seed: b / 8), b / 8)
            }
        }, atRead: read)
    }

    /// An awaited delete of every row while the program relates a held row to the row it took
    /// first: at its third read, after it read the rows (the first) and that row's children
    /// (the second; it takes the rows from the last, by key). The row related goes too, so
    /// the delete needs no read of it.
    private func deleteAllAwaitedWhileTheProgramWrites(_ b: UInt64) async throws {
        try await deleteAllAwaited(meanwhile: { [self] in
            note("meanwhile, at the delete's read 3:")
            let stored = heldObjects.filter { object in
                if case .key? = row(of: object) { isManaged(object) } else { false }
            }
            guard let last = reference.shownRows.keys.max(), let parent = objects[last], isManaged(parent), !stored.isEmpty else {
                return note("(nothing: the row of the largest key is not held, or no stored row is)")
            }
            link(stored[Int(b % UInt64(stored.count))], to: parent, value: .integer(last))
        }, atRead: 3)
    }
}
