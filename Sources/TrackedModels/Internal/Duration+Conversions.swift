import Dispatch

extension Duration {
    /// The duration in seconds, for clocks and C APIs that take a floating-point interval.
    package var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds, rounded down and clamped to `Int`.
    package var wholeMilliseconds: Int {
        Int(clamping: components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000)
    }

    /// The duration as a dispatch interval, in nanoseconds.
    var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(clamping: components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000))
    }
}
