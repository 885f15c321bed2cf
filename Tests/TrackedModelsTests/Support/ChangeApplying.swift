import TrackedModels

extension Array {
    /// The keys told before, with a live list's change applied through its offsets: the keys
    /// at ``FetchedResults/Change/removedOffsets`` removed, from the last, then the list's
    /// keys now at ``FetchedResults/Change/insertedOffsets`` inserted. nil where the change
    /// does not apply, or where its `difference` or its `moves` tell something else.
    func applying<Model>(_ change: FetchedResults<Model>.Change, shown: [Model.PrimaryKeyValue?]) -> [Model.PrimaryKeyValue?]? where Element == Model.PrimaryKeyValue? {
        var keys = self
        let removed = change.removedOffsets, inserted = change.insertedOffsets
        guard removed == removed.sorted(), Set(removed).count == removed.count, inserted == inserted.sorted(), Set(inserted).count == inserted.count else { return nil }
        for offset in removed.reversed() {
            guard keys.indices.contains(offset) else { return nil }
            keys.remove(at: offset)
        }
        for offset in inserted {
            guard offset <= keys.count, shown.indices.contains(offset) else { return nil }
            keys.insert(shown[offset], at: offset)
        }
        // The same change as a CollectionDifference, and its moves, agree.
        guard applying(change.difference) == keys else { return nil }
        for move in change.moves {
            guard removed.contains(move.from), inserted.contains(move.to), self[move.from] == keys[move.to] else { return nil }
        }
        return keys
    }
}
