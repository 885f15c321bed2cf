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
        // A bare listener hears every commit's notification; the store hears the same one first,
        // then looks at the log and reads the rows: over 20 commits, its median is the higher.
        #expect(report["latency_floor_commits"] as? Int == 20, "the bare listener heard \(report["latency_floor_commits"] ?? "none") of 20 commits")
        let floor = try #require(report["latency_floor_median_ms"] as? Double, "no floor in \(bench.stdout)")
        let store = try #require(report["latency_median_ms"] as? Double)
        #expect(floor > 0 && floor <= store, "a bare LISTEN heard the commits \(floor) ms after the bump (median), the store \(store) ms")
        #expect(report["latency_floor_lower_median_ms"] is Double && report["latency_floor_lower_p99_ms"] is Double)
        let fanout = try #require(report["fanout"] as? [String: Any])
        #expect(fanout["watchers"] as? Int == 2)
        #expect(fanout["lost"] as? Int == 0)
        #expect((fanout["rows_per_s"] as? Double ?? 0) > 0)
        #expect(fanout["p50_ms"] is Double && fanout["p99_ms"] is Double)
    }
}
