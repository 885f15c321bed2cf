/// The rows of a live list in order, with their positions: insert, remove, find a row's
/// position and the row at a position, each in O(log n) plus a short move within one chunk.
///
/// Rows sit in sorted chunks of at most ``maximumChunk`` entries; a Fenwick tree over the
/// chunks' sizes turns a position into a chunk and back. (swift-collections' B-tree sorted
/// containers are still behind an "unstable, not for production" trait in 1.6.0.)
struct SortedRows {
    struct Entry {
        /// What the row sorts by: the sort columns' values, primary key last.
        var sortValues: [SQLValue]
        var key: SQLValue
    }

    static let maximumChunk = 512

    private var chunks: [[Entry]] = []
    /// Fenwick tree over the chunks' sizes (1-based).
    private var tree: [Int] = [0]
    private(set) var count = 0
    private let precedes: ([SQLValue], [SQLValue]) -> Bool

    /// - Parameter precedes: The strict order of sort values (the last of which is the key, so
    ///   no two rows are equal).
    init(precedes: @escaping ([SQLValue], [SQLValue]) -> Bool) {
        self.precedes = precedes
    }

    /// Replaces the contents with entries already in order.
    mutating func replace(withSorted entries: [Entry]) {
        chunks = stride(from: 0, to: entries.count, by: Self.maximumChunk / 2).map {
            Array(entries[$0..<min($0 + Self.maximumChunk / 2, entries.count)])
        }
        count = entries.count
        rebuildTree()
    }

    subscript(position: Int) -> Entry {
        let (chunk, offset) = locate(position)
        return chunks[chunk][offset]
    }

    /// The position of the entry with these sort values, if present.
    func position(of sortValues: [SQLValue]) -> Int? {
        guard let chunk = chunkIndex(for: sortValues) else { return nil }
        let offset = lowerBound(sortValues, in: chunks[chunk])
        guard offset < chunks[chunk].count, !precedes(sortValues, chunks[chunk][offset].sortValues) else { return nil }
        return prefix(chunk) + offset
    }

    /// Inserts an entry and returns its position.
    @discardableResult
    mutating func insert(_ entry: Entry) -> Int {
        guard !chunks.isEmpty else {
            chunks = [[entry]]
            count = 1
            rebuildTree()
            return 0
        }
        let chunk = chunkIndex(for: entry.sortValues) ?? chunks.count - 1
        let offset = lowerBound(entry.sortValues, in: chunks[chunk])
        let position = prefix(chunk) + offset
        chunks[chunk].insert(entry, at: offset)
        count += 1
        if chunks[chunk].count > Self.maximumChunk {
            let upper = Array(chunks[chunk][(Self.maximumChunk / 2)...])
            chunks[chunk].removeSubrange((Self.maximumChunk / 2)...)
            chunks.insert(upper, at: chunk + 1)
            rebuildTree()
        } else {
            add(1, toChunk: chunk)
        }
        return position
    }

    /// Removes the entry with these sort values and returns where it was.
    @discardableResult
    mutating func remove(_ sortValues: [SQLValue]) -> Int? {
        guard let chunk = chunkIndex(for: sortValues) else { return nil }
        let offset = lowerBound(sortValues, in: chunks[chunk])
        guard offset < chunks[chunk].count, !precedes(sortValues, chunks[chunk][offset].sortValues) else { return nil }
        let position = prefix(chunk) + offset
        chunks[chunk].remove(at: offset)
        count -= 1
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            rebuildTree()
        } else {
            add(-1, toChunk: chunk)
        }
        return position
    }

    /// The keys at positions `range`, in order.
    func keys(in range: Range<Int>) -> [SQLValue] {
        guard !range.isEmpty else { return [] }
        var keys: [SQLValue] = []
        keys.reserveCapacity(range.count)
        var (chunk, offset) = locate(range.lowerBound)
        while keys.count < range.count {
            keys.append(chunks[chunk][offset].key)
            offset += 1
            if offset == chunks[chunk].count {
                chunk += 1
                offset = 0
            }
        }
        return keys
    }

    // MARK: - Chunks

    /// The chunk that holds, or would hold, these sort values: the first whose last entry does
    /// not precede them; nil when they follow every entry (then the last chunk takes them).
    private func chunkIndex(for sortValues: [SQLValue]) -> Int? {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(chunks[middle][chunks[middle].count - 1].sortValues, sortValues) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < chunks.count ? low : nil
    }

    private func lowerBound(_ sortValues: [SQLValue], in chunk: [Entry]) -> Int {
        var low = 0
        var high = chunk.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(chunk[middle].sortValues, sortValues) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The chunk and offset of a position.
    private func locate(_ position: Int) -> (chunk: Int, offset: Int) {
        precondition(position >= 0 && position < count, "position \(position) is outside the \(count) rows")
        // Fenwick descent: the largest chunk index whose prefix sum is at most `position`.
        var index = 0
        var remaining = position
        var step = 1
        while step * 2 < tree.count { step *= 2 }
        while step > 0 {
            if index + step < tree.count, tree[index + step] <= remaining {
                index += step
                remaining -= tree[index]
            }
            step /= 2
        }
        return (index, remaining)
    }

    /// The number of entries in the chunks before `chunk`.
    private func prefix(_ chunk: Int) -> Int {
        var sum = 0
        var index = chunk
        while index > 0 {
            sum += tree[index]
            index -= index & -index
        }
        return sum
    }

    private mutating func add(_ delta: Int, toChunk chunk: Int) {
        var index = chunk + 1
        while index < tree.count {
            tree[index] += delta
            index += index & -index
        }
    }

    private mutating func rebuildTree() {
        tree = Array(repeating: 0, count: chunks.count + 1)
        for (chunk, entries) in chunks.enumerated() {
            var index = chunk + 1
            while index < tree.count {
                tree[index] += entries.count
                index += index & -index
            }
        }
    }

    /// Checks the order and the counts; for tests.
    func checkInvariants() {
        var previous: [SQLValue]?
        var total = 0
        for (chunk, entries) in chunks.enumerated() {
            precondition(!entries.isEmpty && entries.count <= Self.maximumChunk, "chunk \(chunk) has \(entries.count) entries")
            precondition(prefix(chunk) == total, "the position index is off at chunk \(chunk)")
            for entry in entries {
                if let previous { precondition(precedes(previous, entry.sortValues), "rows are out of order") }
                previous = entry.sortValues
            }
            total += entries.count
        }
        precondition(total == count, "count is off")
    }
}
