import Observation

/// Counts Observation's notifications of what a closure reads, re-armed after each, as a view
/// redrawn on each change would be.
///
/// ```swift
/// let heard = ObservationCount()
/// heard.follow { _ = total.value }
/// rows[1].count += 5
/// for _ in 0..<5 { await Task.yield() }
/// #expect(heard.count == 1)
/// ```
@MainActor final class ObservationCount {
    private(set) var count = 0

    func follow(_ read: @escaping @MainActor () -> Void) {
        withObservationTracking { read() } onChange: { [weak self] in
            Task { @MainActor in
                self?.count += 1
                self?.follow(read)
            }
        }
    }
}
