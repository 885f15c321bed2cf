/// The rows of a live list in order, with their positions: insert, remove, find a row's
/// position and the row at a position, each in O(log n) plus a short move within one chunk.
///
/// Rows sit in sorted chunks of at most ``maximumChunk`` entries; a Fenwick tree over the
/// chunks' sizes turns a position into a chunk and back, and the chunks' last entries, kept in
/// one contiguous array, find a row's chunk without touching the others. Entries hold their
/// sort values inline, so that a comparison reads no other memory; beside them, each chunk and
/// the last entries keep the entries' fingerprints (``Fingerprint``), which decide most
/// comparisons of a list ordered by one integer column from a few contiguous words. (swift-collections' B-tree
/// sorted containers are still behind an "unstable, not for production" trait in 1.6.0.)
struct SortedRows {
    /// A row as it sorts: the first sort value, the sort values after it, and the primary key,
    /// which is always the last term (so no two rows are equal).
    struct Entry: Equatable {
        var head: SQLValue
        /// The sort values between the first and the key; empty for an order by one property.
        var middle: [SQLValue]
        var key: SQLValue
    }

    static let maximumChunk = 128

    private var chunks: [[Entry]] = []
    /// The fingerprints of each chunk's entries.
    private var prints: [[Fingerprint]] = []
    /// The last entry of each chunk, and its fingerprint.
    private var lasts: [Entry] = []
    private var lastPrints: [Fingerprint] = []
    /// Fenwick tree over the chunks' sizes (1-based).
    private var tree: [Int] = [0]
    private(set) var count = 0
    private let order: Order

    init(order: Order) {
        self.order = order
    }

    /// Replaces the contents with entries already in order.
    mutating func replace(withSorted entries: [Entry]) {
        chunks = stride(from: 0, to: entries.count, by: Self.maximumChunk / 2).map {
            Array(entries[$0..<min($0 + Self.maximumChunk / 2, entries.count)])
        }
        prints = chunks.map { $0.map(order.fingerprint) }
        count = entries.count
        rebuildIndex()
    }

    subscript(position: Int) -> Entry {
        let (chunk, offset) = locate(position)
        return chunks[chunk][offset]
    }

    /// Inserts an entry and returns its position.
    @discardableResult
    mutating func insert(_ entry: Entry) -> Int {
        let print = order.fingerprint(of: entry)
        guard !chunks.isEmpty else {
            chunks = [[entry]]
            prints = [[print]]
            count = 1
            rebuildIndex()
            return 0
        }
        let chunk = chunkIndex(for: entry, print) ?? chunks.count - 1
        let offset = lowerBound(entry, print, in: chunks[chunk], prints[chunk])
        let position = prefix(chunk) + offset
        chunks[chunk].insert(entry, at: offset)
        prints[chunk].insert(print, at: offset)
        count += 1
        if chunks[chunk].count > Self.maximumChunk {
            let half = Self.maximumChunk / 2
            chunks.insert(Array(chunks[chunk][half...]), at: chunk + 1)
            chunks[chunk].removeSubrange(half...)
            prints.insert(Array(prints[chunk][half...]), at: chunk + 1)
            prints[chunk].removeSubrange(half...)
            rebuildIndex()
        } else {
            if offset == chunks[chunk].count - 1 {
                lasts[chunk] = entry
                lastPrints[chunk] = print
            }
            add(1, toChunk: chunk)
        }
        return position
    }

    /// Removes an entry and returns where it was.
    @discardableResult
    mutating func remove(_ entry: Entry) -> Int? {
        let print = order.fingerprint(of: entry)
        guard let chunk = chunkIndex(for: entry, print) else { return nil }
        let offset = lowerBound(entry, print, in: chunks[chunk], prints[chunk])
        guard offset < chunks[chunk].count, chunks[chunk][offset] == entry else { return nil }
        let position = prefix(chunk) + offset
        chunks[chunk].remove(at: offset)
        prints[chunk].remove(at: offset)
        count -= 1
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            prints.remove(at: chunk)
            rebuildIndex()
        } else {
            if offset == chunks[chunk].count {
                lasts[chunk] = chunks[chunk][offset - 1]
                lastPrints[chunk] = prints[chunk][offset - 1]
            }
            add(-1, toChunk: chunk)
        }
        return position
    }

    /// The number of entries that precede `entry`: its position where it is present, the
    /// position it would take otherwise.
    func rank(of entry: Entry) -> Int {
        let print = order.fingerprint(of: entry)
        guard let chunk = chunkIndex(for: entry, print) else { return count }
        return prefix(chunk) + lowerBound(entry, print, in: chunks[chunk], prints[chunk])
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

    /// The chunk that holds, or would hold, an entry: the first whose last entry does not
    /// precede it; nil when it follows every entry (then the last chunk takes it).
    private func chunkIndex(for entry: Entry, _ print: Fingerprint) -> Int? {
        let low = lowerBound(entry, print, in: lasts, lastPrints)
        return low < lasts.count ? low : nil
    }

    /// The first position in sorted `entries` (with their fingerprints, `prints`) whose entry
    /// does not precede `entry` (whose fingerprint is `print`). An entry is read only where
    /// the fingerprints do not decide, and then where it lies, through a buffer: an array's
    /// subscript would copy it out.
    private func lowerBound(_ entry: Entry, _ print: Fingerprint, in entries: [Entry], _ prints: [Fingerprint]) -> Int {
        prints.withUnsafeBufferPointer { prints in
            entries.withUnsafeBufferPointer { entries in
                var low = 0
                var high = entries.count
                while low < high {
                    let middle = (low + high) / 2
                    let precedes = prints[middle].precedes(print) ?? order.precedes(entries[middle], entry)
                    if precedes { low = middle + 1 } else { high = middle }
                }
                return low
            }
        }
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

    /// Rebuilds the chunks' last entries and sizes after chunks were split, merged or replaced.
    private mutating func rebuildIndex() {
        lasts = chunks.map { $0[$0.count - 1] }
        lastPrints = prints.map { $0[$0.count - 1] }
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
        var previous: Entry?
        var total = 0
        precondition(lasts.count == chunks.count && lastPrints.count == chunks.count && prints.count == chunks.count, "one last entry per chunk")
        for (chunk, entries) in chunks.enumerated() {
            precondition(!entries.isEmpty && entries.count <= Self.maximumChunk, "chunk \(chunk) has \(entries.count) entries")
            precondition(prefix(chunk) == total, "the position index is off at chunk \(chunk)")
            precondition(lasts[chunk] == entries[entries.count - 1], "the last entry of chunk \(chunk) is stale")
            precondition(prints[chunk].count == entries.count, "chunk \(chunk) has \(prints[chunk].count) fingerprints for \(entries.count) entries")
            for (entry, print) in zip(entries, prints[chunk]) {
                precondition(print == order.fingerprint(of: entry), "a fingerprint in chunk \(chunk) is not its entry's")
            }
            precondition(lastPrints[chunk] == prints[chunk][entries.count - 1], "the last fingerprint of chunk \(chunk) is stale")
            for entry in entries {
                if let previous {
                    precondition(order.precedes(previous, entry), "rows are out of order")
                    let fingerprints = order.fingerprint(of: previous).precedes(order.fingerprint(of: entry))
                    precondition(fingerprints ?? true, "fingerprints disagree with the entries' order")
                }
                previous = entry
            }
            total += entries.count
        }
        precondition(total == count, "count is off")
    }
}
