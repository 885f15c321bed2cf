extension FetchedResults {
    /// One change of the results, as ``FetchedResults/onChange(_:)`` and
    /// ``FetchedResults/differences`` tell it: the rows that left, by their offsets in the
    /// results as they were, and the rows that entered, by their offsets in the results as
    /// they are. A row that moved is in both, and in ``moves``.
    ///
    /// It holds the offsets of the burst's net change, as the results worked them out (edit by
    /// edit, or by comparing what they show for a long burst, a reset or a window), so making
    /// it costs nothing more. ``difference`` builds the same change as a `CollectionDifference`
    /// of ``FetchedResults/keys``, on demand.
    ///
    /// ```swift
    /// let subscription = results.onChange { change in
    ///     tableView.performBatchUpdates {
    ///         tableView.deleteRows(at: change.removedOffsets.map { IndexPath(row: $0, section: 0) }, with: .fade)
    ///         tableView.insertRows(at: change.insertedOffsets.map { IndexPath(row: $0, section: 0) }, with: .fade)
    ///     }
    /// }
    /// ```
    public struct Change: Sendable {
        /// Rows that left, by offset in the results as they were, ascending, with their keys.
        private let removed: [(offset: Int, key: SQLValue)]
        /// Rows that entered, by offset in the results as they are, ascending, with their keys.
        private let inserted: [(offset: Int, key: SQLValue)]

        /// The net change a list recorded.
        init(_ changes: ListChanges) {
            removed = changes.removed
            inserted = changes.inserted
        }

        /// The offsets, in the results as they were, of the rows that left or moved away,
        /// ascending: remove them from the last to the first, then insert
        /// ``insertedOffsets``, to turn the old results into the new.
        ///
        /// ```swift
        /// for offset in change.removedOffsets.reversed() { shown.remove(at: offset) }
        /// ```
        public var removedOffsets: [Int] { removed.map(\.offset) }

        /// The offsets, in the results as they are, of the rows that entered or moved there,
        /// ascending.
        ///
        /// ```swift
        /// for offset in change.insertedOffsets { shown.insert(results[offset], at: offset) }
        /// ```
        public var insertedOffsets: [Int] { inserted.map(\.offset) }

        /// The rows that stayed in the results but moved: from their offset in the results as
        /// they were to their offset in the results as they are, in the order of `from`. Each
        /// is also in ``removedOffsets`` and ``insertedOffsets``.
        ///
        /// ```swift
        /// for move in change.moves { collectionView.moveItem(at: [0, move.from], to: [0, move.to]) }
        /// ```
        public var moves: [(from: Int, to: Int)] {
            let partners = insertedPartners()
            return removed.indices.compactMap { index in partners[index].map { (removed[index].offset, inserted[$0].offset) } }
        }

        /// The change as a `CollectionDifference` of ``FetchedResults/keys``: a move is a
        /// removal and an insertion associated with each other. Built when asked for, in
        /// O(rows changed).
        ///
        /// ```swift
        /// shownKeys = shownKeys.applying(change.difference)!
        /// ```
        public var difference: Difference {
            let partners = insertedPartners()
            var removedPartners = [Int?](repeating: nil, count: inserted.count)
            for (index, partner) in partners.enumerated() {
                if let partner { removedPartners[partner] = index }
            }
            var changes: [Difference.Change] = []
            changes.reserveCapacity(removed.count + inserted.count)
            for (index, row) in removed.enumerated() {
                changes.append(.remove(offset: row.offset, element: MemberObjects<Model>.typedKey(row.key), associatedWith: partners[index].map { inserted[$0].offset }))
            }
            for (index, row) in inserted.enumerated() {
                changes.append(.insert(offset: row.offset, element: MemberObjects<Model>.typedKey(row.key), associatedWith: removedPartners[index].map { removed[$0].offset }))
            }
            guard let difference = CollectionDifference(changes) else {
                preconditionFailure("the recorded list edits do not form a difference")
            }
            return difference
        }

        /// For each removed row, the index in `inserted` of the same row, if it moved. A few
        /// changes (mostly one row moved) are matched by a scan, many by hashing.
        private func insertedPartners() -> [Int?] {
            if removed.count < 8 && inserted.count < 8 {
                return removed.map { row in inserted.firstIndex { $0.key == row.key } }
            }
            var insertedAt: [SQLValue: Int] = [:]
            insertedAt.reserveCapacity(inserted.count)
            for (index, row) in inserted.enumerated() { insertedAt[row.key] = index }
            return removed.map { insertedAt[$0.key] }
        }
    }
}
