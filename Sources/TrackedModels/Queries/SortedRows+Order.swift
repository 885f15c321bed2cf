import Foundation

extension SortedRows {
    /// The order of entries: each sort value by its term's direction and text order, then the
    /// key, ascending.
    struct Order {
        struct Term {
            var ascending: Bool
            var textOrder: TextOrder
        }

        /// The terms of `head`, then of each of `middle` (a term after those, the key's, is not
        /// read: the key always sorts ascending).
        let terms: [Term]

        /// Whether `a` comes before `b`.
        func precedes(_ a: Entry, _ b: Entry) -> Bool {
            var order = terms[0].textOrder.compare(a.head, b.head)
            if order != .orderedSame { return (order == .orderedAscending) == terms[0].ascending }
            for index in a.middle.indices {
                order = terms[index + 1].textOrder.compare(a.middle[index], b.middle[index])
                if order != .orderedSame { return (order == .orderedAscending) == terms[index + 1].ascending }
            }
            return SQLValue.compare(a.key, b.key) == .orderedAscending
        }

        /// Where an entry sorts, in two machine words where they say it exactly: an order by
        /// one column holding an integer (a count, a position), with integer keys.
        func fingerprint(of entry: Entry) -> Fingerprint {
            guard entry.middle.isEmpty, case .integer(let head) = entry.head, case .integer(let key) = entry.key else { return .inexact }
            // Signed order as unsigned order; a descending term reverses it.
            let ascendingHead = UInt64(bitPattern: head) ^ (1 << 63)
            return Fingerprint(head: terms[0].ascending ? ascendingHead : ~ascendingHead, key: UInt64(bitPattern: key) ^ (1 << 63), isExact: true)
        }
    }

    /// An entry's place in its order as two unsigned words compared in turn, where its values
    /// allow (``Order/fingerprint(of:)``). Kept beside the entries in arrays of their own, so
    /// that a search reads a few contiguous words instead of entries spread across memory.
    struct Fingerprint: Equatable {
        var head: UInt64
        var key: UInt64
        var isExact: Bool

        /// Says nothing: the entries are compared instead.
        static let inexact = Fingerprint(head: 0, key: 0, isExact: false)

        /// Whether `self` precedes `other`, where both are exact; nil where the entries must be
        /// compared.
        @inline(__always)
        func precedes(_ other: Fingerprint) -> Bool? {
            guard isExact && other.isExact else { return nil }
            return head < other.head || (head == other.head && key < other.key)
        }
    }
}
