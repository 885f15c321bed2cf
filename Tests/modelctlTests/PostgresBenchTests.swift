import Foundation
import PostgresTestSupport
import Testing

/// `modelctl bench --db postgres://…`: its figures are there and physically sane, and the
/// fan-out to watcher processes loses nothing.
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresBenchTests {
    @Test func benchOnPostgreSQLPrintsItsFiguresTheFloorTheyStandOnAndTheFanout() async throws {
        let workspace = try Workspace()
        let url = try await PostgresServer.makeDatabase()
        let bench = try await workspace.modelctl.run(
            "bench", "--db", url, "--rows", "200", "--commits", "20", "--watchers", "2", "--seconds", "1", "--rate", "400", "--per-commit", "10", "--json"
        )
        #expect(bench.status == 0, "\(bench.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(bench.stdout.utf8)) as? [String: Any])
        #expect(report["rows"] as? Int == 200)
        for figure in ["flush_rows_per_second", "raw_rows_per_second"] {
            #expect((report[figure] as? Double ?? 0) > 0, "\(figure) is \(report[figure] ?? "missing")")
        }
        // Hearing a commit's notification is what the store does first, before it looks at the
        // log and reads the rows: over 20 commits, the bare listener's median is the lower.
        let floor = try #require(report["latency_floor_median_ms"] as? Double, "no floor in \(bench.stdout)")
        let floorP99 = try #require(report["latency_floor_p99_ms"] as? Double)
        let store = try #require(report["latency_lower_median_ms"] as? Double)
        #expect(floor >= 0 && floor <= floorP99)
        #expect(floor <= store, "a bare LISTEN heard the commits in \(floor) ms (median), the store in \(store) ms")
        let fanout = try #require(report["fanout"] as? [String: Any])
        #expect(fanout["watchers"] as? Int == 2)
        #expect(fanout["lost"] as? Int == 0)
        #expect((fanout["rows_per_s"] as? Double ?? 0) > 0)
        let p50 = try #require(fanout["p50_ms"] as? Double), p99 = try #require(fanout["p99_ms"] as? Double)
        #expect(p50 >= 0 && p50 <= p99)
    }
}
