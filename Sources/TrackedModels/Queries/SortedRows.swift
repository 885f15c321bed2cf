/// The rows of a live list in order, with their positions: insert, remove, find a row's
/// position and the row at a position, each in O(log n) plus a short move within one chunk.
///
/// Rows sit in sorted chunks of at most ``maximumChunk`` entries; a Fenwick tree over the
/// chunks' sizes turns a position into a chunk and back, and the chunks' last entries, kept in
/// one contiguous array, find a row's chunk without touching the others. Each entry is kept as
/// a ``Slot``: its fingerprint (``Fingerprint``), which decides most comparisons of a list
/// ordered by an integer or text column, and the entry itself only where the fingerprint does
/// not hold it. A list ordered by an integer column then keeps 32 bytes a row, in contiguous
/// words, and a search or a shift within a chunk reads and moves little memory. (swift-collections'
/// B-tree sorted containers are still behind an "unstable, not for production" trait in 1.6.0.)
struct SortedRows {
    /// A row as it sorts: the first sort value, the sort values after it, and the primary key,
    /// which is always the last term (so no two rows are equal).
    struct Entry: Equatable, Sendable {
        var head: SQLValue
        /// The sort values between the first and the key; empty for an order by one property.
        var middle: [SQLValue]
        var key: SQLValue
    }

    static let maximumChunk = 128

    /// The entries in order, in chunks, as ``Slot``s.
    private var chunks: [[Slot]] = []
    /// The last entry of each chunk.
    private var lasts: [Slot] = []
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
            Self.chunk(entries[$0..<min($0 + Self.maximumChunk / 2, entries.count)].map(order.slot))
        }
        count = entries.count
        rebuildIndex()
    }

    subscript(position: Int) -> Entry {
        let (chunk, offset) = locate(position)
        return order.entry(of: slot(at: offset, inChunk: chunk))
    }

    /// Inserts an entry and returns its position.
    @discardableResult
    mutating func insert(_ entry: Entry) -> Int {
        let slot = order.slot(for: entry)
        guard !chunks.isEmpty else {
            chunks = [Self.chunk([slot])]
            count = 1
            rebuildIndex()
            return 0
        }
        let chunk = chunkIndex(for: entry, slot.print) ?? chunks.count - 1
        let offset = lowerBound(entry, slot.print, inChunk: chunk)
        let position = prefix(chunk) + offset
        chunks[chunk].insert(slot, at: offset)
        count += 1
        if chunks[chunk].count > Self.maximumChunk {
            let half = Self.maximumChunk / 2
            chunks.insert(Self.chunk(chunks[chunk][half...]), at: chunk + 1)
            chunks[chunk].removeSubrange(half...)
            rebuildIndex()
        } else {
            if offset == chunks[chunk].count - 1 { lasts[chunk] = slot }
            add(1, toChunk: chunk)
        }
        return position
    }

    /// Removes an entry and returns where it was.
    @discardableResult
    mutating func remove(_ entry: Entry) -> Int? {
        let print = order.fingerprint(of: entry)
        guard let chunk = chunkIndex(for: entry, print) else { return nil }
        let offset = lowerBound(entry, print, inChunk: chunk)
        guard offset < chunks[chunk].count, order.slot(slot(at: offset, inChunk: chunk), holds: entry, print) else { return nil }
        let position = prefix(chunk) + offset
        chunks[chunk].remove(at: offset)
        count -= 1
        if chunks[chunk].isEmpty {
            chunks.remove(at: chunk)
            rebuildIndex()
        } else {
            if offset == chunks[chunk].count { lasts[chunk] = slot(at: offset - 1, inChunk: chunk) }
            add(-1, toChunk: chunk)
        }
        return position
    }

    /// The number of entries that precede `entry`: its position where it is present, the
    /// position it would take otherwise.
    func rank(of entry: Entry) -> Int {
        let print = order.fingerprint(of: entry)
        guard let chunk = chunkIndex(for: entry, print) else { return count }
        return prefix(chunk) + lowerBound(entry, print, inChunk: chunk)
    }

    /// The keys at positions `range`, in order.
    func keys(in range: Range<Int>) -> [SQLValue] {
        guard !range.isEmpty else { return [] }
        var keys: [SQLValue] = []
        keys.reserveCapacity(range.count)
        var (chunk, offset) = locate(range.lowerBound)
        chunks.withUnsafeBufferPointer { chunks in
            while keys.count < range.count {
                chunks[chunk].withUnsafeBufferPointer { slots in
                    for slot in slots[offset..<min(slots.count, offset + range.count - keys.count)] {
                        keys.append(order.key(of: slot))
                    }
                }
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
        let low = lasts.withUnsafeBufferPointer { lowerBound(entry, print, in: $0) }
        return low < lasts.count ? low : nil
    }

    // A chunk is read in place, through `chunks`' storage: taken out as an array (`chunks[i]`)
    // it would be retained and released at every change, each likely a cache miss.

    /// The first position in chunk `chunk` whose entry does not precede `entry`.
    private func lowerBound(_ entry: Entry, _ print: Fingerprint, inChunk chunk: Int) -> Int {
        chunks.withUnsafeBufferPointer { chunks in
            chunks[chunk].withUnsafeBufferPointer { lowerBound(entry, print, in: $0) }
        }
    }

    /// The slot at `offset` in chunk `chunk`.
    private func slot(at offset: Int, inChunk chunk: Int) -> Slot {
        chunks.withUnsafeBufferPointer { chunks in
            chunks[chunk].withUnsafeBufferPointer { $0[offset] }
        }
    }

    /// The first position in sorted `slots` whose entry does not precede `entry` (whose
    /// fingerprint is `print`). An entry is read only where the fingerprints do not decide:
    /// a spilled one where it lies, one the fingerprint holds made again from its words.
    private func lowerBound(_ entry: Entry, _ print: Fingerprint, in slots: UnsafeBufferPointer<Slot>) -> Int {
        var low = 0
        var high = slots.count
        while low < high {
            let middle = (low + high) / 2
            let precedes = slots[middle].print.precedes(print) ?? order.precedes(slots[middle], entry)
            if precedes { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// A chunk of `slots`, with room for the most a chunk holds before it splits, so that it
    /// never grows its storage.
    private static func chunk(_ slots: some Collection<Slot>) -> [Slot] {
        var chunk: [Slot] = []
        chunk.reserveCapacity(maximumChunk + 1)
        chunk.append(contentsOf: slots)
        return chunk
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
        tree = Array(repeating: 0, count: chunks.count + 1)
        for (chunk, slots) in chunks.enumerated() {
            var index = chunk + 1
            while index < tree.count {
                tree[index] += slots.count
                index += index & -index
            }
        }
    }

    /// Checks the order, the counts and the slots; for tests.
    func checkInvariants() {
        var previous: Entry?
        var total = 0
        precondition(lasts.count == chunks.count, "one last entry per chunk")
        for (chunk, slots) in chunks.enumerated() {
            precondition(!slots.isEmpty && slots.count <= Self.maximumChunk, "chunk \(chunk) has \(slots.count) entries")
            precondition(prefix(chunk) == total, "the position index is off at chunk \(chunk)")
            precondition(lasts[chunk] == slots[slots.count - 1], "the last entry of chunk \(chunk) is stale")
            for slot in slots {
                let entry = order.entry(of: slot)
                precondition(slot == order.slot(for: entry), "a slot in chunk \(chunk) is not its entry's")
                if let previous {
                    precondition(order.precedes(previous, entry), "rows are out of order")
                    let fingerprints = order.fingerprint(of: previous).precedes(slot.print)
                    precondition(fingerprints ?? true, "fingerprints disagree with the entries' order")
                }
                previous = entry
            }
            total += slots.count
        }
        precondition(total == count, "count is off")
    }
}
