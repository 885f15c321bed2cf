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

        /// Whether the entry `slot` keeps comes before `b`: a spilled entry is compared where
        /// it lies, not copied out.
        func precedes(_ slot: Slot, _ b: Entry) -> Bool {
            if let spilled = slot.spilled { return precedes(spilled.entry, b) }
            return precedes(entry(of: slot), b)
        }

        /// An entry as a chunk keeps it.
        func slot(for entry: Entry) -> Slot {
            let print = fingerprint(of: entry)
            return Slot(print: print, spilled: print.flags & Fingerprint.holdsEntry != 0 ? nil : Slot.Spilled(entry))
        }

        /// The entry a slot keeps.
        func entry(of slot: Slot) -> Entry {
            if let spilled = slot.spilled { return spilled.entry }
            let print = slot.print
            let rank = terms[0].ascending ? print.rank : ~print.rank
            let head: SQLValue = rank == 0 ? .null : .integer(Int64(bitPattern: (terms[0].ascending ? print.head : ~print.head) ^ (1 << 63)))
            return Entry(head: head, middle: [], key: key(of: slot))
        }

        /// The key of the entry a slot keeps.
        func key(of slot: Slot) -> SQLValue {
            slot.spilled?.entry.key ?? .integer(Int64(bitPattern: slot.print.key ^ (1 << 63)))
        }

        /// Whether `slot` keeps `entry`, whose fingerprint is `print`.
        func slot(_ slot: Slot, holds entry: Entry, _ print: Fingerprint) -> Bool {
            // An entry a fingerprint holds whole is equal to another exactly where their
            // fingerprints are; the fingerprint of any other differs from those in its flags.
            slot.spilled.map { $0.entry == entry } ?? (slot.print == print)
        }

        /// Where an entry sorts, as far as a few machine words say (see ``Fingerprint``).
        func fingerprint(of entry: Entry) -> Fingerprint {
            let term = terms[0]
            var print = Fingerprint.inexact
            // Whether the head can be made again from the fingerprint.
            var isHeadKept = true
            switch entry.head {
            case .null:
                print.flags = Fingerprint.comparable | Fingerprint.wholeHead
            case .integer(let head):
                (print.rank, print.head) = (1, UInt64(bitPattern: head) ^ (1 << 63))
                print.flags = Fingerprint.comparable | Fingerprint.wholeHead
            case .text(let head) where term.textOrder == .binary:
                let (prefix, isWhole) = Fingerprint.prefix(of: head)
                (print.rank, print.head) = (3, prefix)
                print.flags = Fingerprint.comparable | (isWhole ? Fingerprint.wholeHead : 0)
                isHeadKept = false
            default:
                // A real compares with integers by value, and a blob is rare as a sort value:
                // both are compared whole.
                return .inexact
            }
            if !term.ascending {
                print.rank = ~print.rank
                print.head = ~print.head
            }
            if entry.middle.isEmpty, case .integer(let key) = entry.key {
                print.key = UInt64(bitPattern: key) ^ (1 << 63)
                print.flags |= Fingerprint.decidingKey | (isHeadKept ? Fingerprint.holdsEntry : 0)
            }
            return print
        }
    }

    /// An entry's place in its order as far as a few machine words say it, kept in the entry's
    /// ``Slot``, so that a search reads contiguous words instead of entries spread across
    /// memory, and compares values only where the words do not decide.
    ///
    /// The head's kind (NULL, integer, text) and its value (an integer whole; text by its first
    /// eight UTF-8 bytes), both in the head's direction, then the key (an integer, where no
    /// sort value comes between the head and the key). A real or a blob head, text in another
    /// order than binary, and the heads of two kinds that compare by value decide nothing.
    struct Fingerprint: Equatable {
        var rank: UInt8 = 0
        var flags: UInt8 = 0
        var head: UInt64 = 0
        var key: UInt64 = 0

        /// `rank` and `head` order the head.
        static let comparable: UInt8 = 1
        /// `head` holds the whole head: equal heads are equal values.
        static let wholeHead: UInt8 = 2
        /// `key` holds the key, and equal heads leave the order to it.
        static let decidingKey: UInt8 = 4
        /// The fingerprint holds the whole entry (a NULL or integer head, an integer key,
        /// nothing between them): its slot keeps nothing else.
        static let holdsEntry: UInt8 = 8

        /// Says nothing: the entries are compared instead.
        static let inexact = Fingerprint()

        /// Whether `self` precedes `other`; nil where the entries must be compared.
        @inline(__always)
        func precedes(_ other: Fingerprint) -> Bool? {
            let both = flags & other.flags
            guard both & Self.comparable != 0 else { return nil }
            if rank != other.rank { return rank < other.rank }
            if head != other.head { return head < other.head }
            guard both & (Self.wholeHead | Self.decidingKey) == Self.wholeHead | Self.decidingKey else { return nil }
            return key < other.key
        }

        /// The first eight UTF-8 bytes of `text`, zero-padded, as one big-endian word (so that
        /// words order as the bytes do), and whether they are the whole text: eight bytes or
        /// fewer, none zero (a zero byte would be taken for padding).
        static func prefix(of text: String) -> (UInt64, isWhole: Bool) {
            var word: UInt64 = 0
            var count = 0
            var hasZero = false
            for byte in text.utf8 {
                guard count < 8 else { return (word, false) }
                word |= UInt64(byte) << (56 - 8 * count)
                hasZero = hasZero || byte == 0
                count += 1
            }
            return (word, !hasZero)
        }
    }

    /// An entry as a chunk keeps it: its fingerprint, and the entry itself only where the
    /// fingerprint does not hold it (``Fingerprint/holdsEntry``), spilled to the heap.
    struct Slot: Equatable {
        final class Spilled: Sendable {
            let entry: Entry

            init(_ entry: Entry) {
                self.entry = entry
            }
        }

        var print: Fingerprint
        var spilled: Spilled?

        static func == (a: Slot, b: Slot) -> Bool {
            a.print == b.print && a.spilled?.entry == b.spilled?.entry
        }
    }
}
