/// Which of the store's batches the database holds, as the worker commits them: published
/// before the store hears of each commit, for the store's own reads made meanwhile. A read that
/// finds a batch committed must not lay that batch's changes over what it read once more (an
/// increment would count twice).
///
/// ```swift
/// let before = worker.commitProgress
/// let rows = try engine.answerNow(reads)
/// // Where nothing in flight committed meanwhile, or was committing at the end, `rows` hold
/// // exactly the batches through `before.committedThrough` (less `before.leftOut`).
/// ```
struct CommitProgress: Equatable, Sendable {
    /// The sequence of the batch committing now, if one is: a read made now may find it, or
    /// not. (Sequences have gaps: a batch that did not commit is handed back, and its units
    /// come again in a later one.)
    var committing: UInt64?
    /// The sequence of the last batch that committed.
    var committedThrough: UInt64 = 0
    /// Units of that batch the database refused, or that were held back behind one: they did
    /// not commit with it.
    var leftOut: Set<UInt64> = []

    /// Whether what was read between `self` and `later` (two looks at the progress) holds each
    /// batch of `sequences` for certain, or for certain not: false where one of them committed,
    /// or was committing, while the read was made.
    func isCertain(until later: CommitProgress, for sequences: some Sequence<UInt64>) -> Bool {
        !sequences.contains { ($0 > committedThrough && $0 <= later.committedThrough) || $0 == later.committing }
    }

    /// Whether what was read holding `self` and what was read holding `other` hold the same of
    /// `sequences`: answers of both can be composed together.
    func holdsTheSame(as other: CommitProgress, of sequences: some Sequence<UInt64>) -> Bool {
        let (low, high) = (min(committedThrough, other.committedThrough), max(committedThrough, other.committedThrough))
        return !sequences.contains { $0 > low && $0 <= high }
    }
}
