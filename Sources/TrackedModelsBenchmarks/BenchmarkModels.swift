import Observation
import Synchronization
import TrackedModels

/// The demo row, tracked.
@Tracked(table: "rows")
final class BenchmarkRow {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int64
}

/// The same row as a plain `@Observable` class, the property-level baseline.
@Observable
final class ObservableRow {
    var id: Int64
    var title: String
    var count: Int64

    init(id: Int64, title: String, count: Int64) {
        self.id = id
        self.title = title
        self.count = count
    }
}

/// The object-level baseline: one change signal for the whole list, heard by every subscriber,
/// as `ObservableObject.objectWillChange` does.
final class ObjectLevelList {
    var counts: [Int64]
    private var subscribers: [() -> Void] = []

    init(rows: Int) {
        counts = Array(repeating: 0, count: rows)
    }

    func subscribe(_ subscriber: @escaping () -> Void) {
        subscribers.append(subscriber)
    }

    func bump(_ index: Int) {
        for subscriber in subscribers { subscriber() }
        counts[index] += 1
    }
}

/// A deterministic sequence of row indices, so every contender bumps the same rows.
struct RowSequence {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    let rows: Int

    init(rows: Int) {
        self.rows = rows
    }

    mutating func next() -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(rows))
    }
}

/// Counts `withObservationTracking` fires, whose `onChange` must be `@Sendable`.
final class EventCounter: Sendable {
    private let count = Atomic(0)

    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
