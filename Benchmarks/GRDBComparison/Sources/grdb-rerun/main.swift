import Foundation
import GRDB

// What an app built on GRDB pays when one row changes under each live form `modelctl bench`
// measures: the write, then the ValueObservation re-running its request and handing over the
// new value. The database, the rows, the bumps and the requests are `modelctl bench`'s.
//
//     swift run -c release grdb-rerun --rows 100000

/// A row of the demo table, decoded as an app would.
struct BenchRow: FetchableRecord, Sendable {
    var id: Int64
    var title: String
    var count: Int64

    init(row: Row) {
        id = row["id"]
        title = row["title"]
        count = row["count"]
    }
}

/// The same seeded generator as `modelctl bench`, so that the same rows are bumped.
struct SplitMix {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

let arguments = CommandLine.arguments
guard let flag = arguments.firstIndex(of: "--rows"), flag + 1 < arguments.count, let rows = Int(arguments[flag + 1]), rows > 0 else {
    FileHandle.standardError.write(Data("usage: grdb-rerun --rows N (N > 0)\n".utf8))
    exit(64)
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("grdb-rerun-\(getpid())")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
let pool = try DatabasePool(path: folder.appendingPathComponent("rows.sqlite").path)
try pool.write { db in
    try db.execute(sql: "CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL, count INTEGER NOT NULL DEFAULT 0)")
    try db.execute(sql: "CREATE INDEX rows_by_count ON rows (count)")
    let insert = try db.makeStatement(sql: "INSERT INTO rows (id, title, count) VALUES (?, ?, ?)")
    for id in 0..<Int64(rows) { try insert.execute(arguments: [id, "Row \(id)", id % 100]) }
}

var generator = SplitMix(seed: 42)
/// Bumps per form: enough for a median, few where each re-run reads every row.
let bumps = max(5, min(400, 4_000_000 / rows))

/// The median time from a bump's write to the observation handing over the value it re-read.
@MainActor func nanosecondsPerBump<Value: Sendable>(_ fetch: @escaping @Sendable (Database) throws -> Value) throws -> Double {
    let delivered = DispatchSemaphore(value: 0)
    let observation = ValueObservation.tracking(fetch)
    let cancellable = observation.start(
        in: pool, scheduling: .async(onQueue: DispatchQueue(label: "grdb-rerun")),
        onError: { error in fatalError("the observation failed: \(error)") },
        onChange: { _ in _ = delivered.signal() }
    )
    delivered.wait()   // the first value
    var samples: [Double] = []
    for _ in 0..<bumps {
        let id = Int64(generator.next() % UInt64(rows))
        let start = ContinuousClock.now
        try pool.write { db in try db.execute(sql: "UPDATE rows SET count = count + 1 WHERE id = ?", arguments: [id]) }
        delivered.wait()
        let elapsed = ContinuousClock.now - start
        samples.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
    }
    cancellable.cancel()
    return median(samples)
}

let list = try nanosecondsPerBump { db in try BenchRow.fetchAll(db, sql: "SELECT * FROM rows WHERE count > 0 ORDER BY count DESC, id") }
let sections = try nanosecondsPerBump { db -> [(Int64, [BenchRow])] in
    // As SwiftData's and SQLiteData's `sectionBy` do: fetch in order, cut into sections.
    var sections: [(Int64, [BenchRow])] = []
    for row in try BenchRow.fetchAll(db, sql: "SELECT * FROM rows ORDER BY count, title") {
        if sections.last?.0 == row.count { sections[sections.count - 1].1.append(row) } else { sections.append((row.count, [row])) }
    }
    return sections
}
let aggregates = try nanosecondsPerBump { db in
    try Row.fetchOne(db, sql: "SELECT count(*) FILTER (WHERE count > 0), sum(count), max(count) FROM rows").map { [$0[0], $0[1], $0[2]] as [Int64] }
}
let grouped = try nanosecondsPerBump { db in
    try Row.fetchAll(db, sql: "SELECT count, count(*) FROM rows GROUP BY count").map { ($0[0], $0[1]) as (Int64, Int64) }
}
let window = try nanosecondsPerBump { db in try BenchRow.fetchAll(db, sql: "SELECT * FROM rows WHERE count > 0 ORDER BY count DESC, id LIMIT 50") }

// A window moved: the page at another offset, fetched.
let members = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM rows WHERE count > 0") ?? 0 }
var moves: [Double] = []
for _ in 0..<bumps {
    let offset = Int(generator.next() % UInt64(max(members - 50, 1)))
    let start = ContinuousClock.now
    let page = try pool.read { db in try BenchRow.fetchAll(db, sql: "SELECT * FROM rows WHERE count > 0 ORDER BY count DESC, id LIMIT 50 OFFSET ?", arguments: [offset]) }
    let elapsed = ContinuousClock.now - start
    precondition(!page.isEmpty, "the page is empty")
    moves.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
}

func format(_ value: Double) -> String { String(format: "%.0f", value) }
print("{\"rows\": \(rows), \"bumps\": \(bumps), \"grdb\": \"7.10.0\", \"live_list_ns_per_bump\": \(format(list)), \"sections_ns_per_bump\": \(format(sections)), "
    + "\"aggregates_ns_per_bump\": \(format(aggregates)), \"grouped_aggregate_ns_per_bump\": \(format(grouped)), \"window_ns_per_bump\": \(format(window)), \"window_ns_per_move\": \(format(median(moves)))}")
