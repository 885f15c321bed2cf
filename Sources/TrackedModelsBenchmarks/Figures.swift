/// How the benchmarks reduce and print their samples.
enum Figures {
    /// The median of samples (the upper one of an even count); NaN for none.
    static func median(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    /// A figure rounded to `digits` decimals, or `null` (for JSON) when it is not finite.
    static func format(_ value: Double, digits: Int = 1) -> String {
        guard value.isFinite else { return "null" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        return String((value * scale).rounded() / scale)
    }
}
