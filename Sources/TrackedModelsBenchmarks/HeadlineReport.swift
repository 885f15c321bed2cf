/// The figures of one ``HeadlineBenchmark`` run, all measured in the same process.
public struct HeadlineReport: Sendable {
    public struct Contender: Sendable {
        /// `tracked-per-row`, `tracked-trap`, `observable-per-row` or `object-level`.
        public var name: String
        public var eventsPerBump: Double
        /// The median over rounds of the mean cost of one bump.
        public var nsPerBump: Double
        /// Bumps measured per round.
        public var bumps: Int
        /// For a persisting contender: the cost per bump of the bumps plus the `flush()` that
        /// makes them durable (one UPDATE per distinct row bumped).
        public var nsPerBumpUntilDurable: Double?
    }

    public var rows: Int
    public var contenders: [Contender]
    /// Rows changed in each measured flush.
    public var flushRows: Int
    /// Rows per second that `flush()` commits (one changed column per row), with the change
    /// log's triggers on, clocked from the first assignment to `flush()`'s acknowledgement, so
    /// that commits the pending threshold starts during the assignments are counted.
    public var flushRowsPerSecond: Double
    /// The same, on a file without the change log.
    public var flushWithoutLogRowsPerSecond: Double
    /// Rows per second of a raw prepared `UPDATE` loop in one transaction on the same file,
    /// its values made inside the clock.
    public var rawRowsPerSecond: Double
    /// ns per tracked assignment with nobody subscribed (registrar, Observation, write-behind).
    public var trackedAssignmentNs: Double
    /// ns per assignment to a plain `@Observable` property with nobody observing.
    public var observableAssignmentNs: Double
    /// Commit-to-event latency across processes, when measured.
    public var latency: ExternalLatencyBenchmark.Report?

    /// One JSON object (`modelctl bench --json`).
    public var json: String {
        let results = contenders.map { contender in
            let durable = contender.nsPerBumpUntilDurable.map { ", \"ns_per_bump_until_durable\": \(number($0))" } ?? ""
            return "{\"name\": \"\(contender.name)\", \"events_per_bump\": \(number(contender.eventsPerBump)), "
                + "\"ns_per_bump\": \(number(contender.nsPerBump)), \"bumps\": \(contender.bumps)\(durable)}"
        }
        return """
            {"rows": \(rows), "results": [\(results.joined(separator: ", "))], \
            "flush": {"rows": \(flushRows), "rows_per_s": \(number(flushRowsPerSecond)), \
            "rows_per_s_without_log": \(number(flushWithoutLogRowsPerSecond)), "raw_rows_per_s": \(number(rawRowsPerSecond))}, \
            "assignment": {"tracked_ns": \(number(trackedAssignmentNs)), "observable_ns": \(number(observableAssignmentNs))}\(latencyJSON)}
            """
    }

    /// A table for people.
    public var table: String {
        var lines = ["rows: \(rows)", pad("contender", 22) + pad("events/bump", 14) + pad("ns/bump", 14) + "ns/bump until durable"]
        for contender in contenders {
            lines.append(
                pad(contender.name, 22) + pad(number(contender.eventsPerBump), 14) + pad(number(contender.nsPerBump), 14)
                    + (contender.nsPerBumpUntilDurable.map { number($0) } ?? "-")
            )
        }
        lines.append("flush: \(number(flushRowsPerSecond)) rows/s over \(flushRows) rows, clocked from the first assignment to flush()'s acknowledgement (auto-flushes included); raw prepared UPDATE loop, values made inside its clock: \(number(rawRowsPerSecond)) rows/s (ratio \(number(flushRowsPerSecond / rawRowsPerSecond, digits: 2)))")
        lines.append("flush without the change log: \(number(flushWithoutLogRowsPerSecond)) rows/s (log costs \(number((1 - flushRowsPerSecond / flushWithoutLogRowsPerSecond) * 100))% of flush throughput)")
        if let latency {
            lines.append("cross-process commit-to-event latency over \(latency.commits) commits: median \(number(latency.lowerBoundMedianMilliseconds, digits: 2))–\(number(latency.medianMilliseconds, digits: 2)) ms, p99 \(number(latency.lowerBoundP99Milliseconds, digits: 2))–\(number(latency.p99Milliseconds, digits: 2)) ms (from the committer's flush returning – from before its bump), \(number(latency.eventsPerCommit, digits: 2)) events per commit")
        }
        lines.append("assignment: tracked \(number(trackedAssignmentNs)) ns, @Observable \(number(observableAssignmentNs)) ns (ratio \(number(trackedAssignmentNs / observableAssignmentNs, digits: 2)))")
        return lines.joined(separator: "\n")
    }

    private var latencyJSON: String {
        guard let latency else { return "" }
        return ", \"latency\": {\"commits\": \(latency.commits), \"median_ms\": \(number(latency.medianMilliseconds, digits: 3)), "
            + "\"p99_ms\": \(number(latency.p99Milliseconds, digits: 3)), "
            + "\"lower_bound_median_ms\": \(number(latency.lowerBoundMedianMilliseconds, digits: 3)), \"lower_bound_p99_ms\": \(number(latency.lowerBoundP99Milliseconds, digits: 3)), "
            + "\"events_per_commit\": \(number(latency.eventsPerCommit, digits: 3))}"
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private func number(_ value: Double, digits: Int = 1) -> String {
        guard value.isFinite else { return "null" }
        let scale = Double(Int(pow10(digits)))
        let rounded = (value * scale).rounded() / scale
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }

    private func pow10(_ digits: Int) -> Double {
        (0..<digits).reduce(1) { result, _ in result * 10 }
    }
}
