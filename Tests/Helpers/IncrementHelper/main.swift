// A helper process for the cross-process tests of TrackedModelsTests.
//
// DATABASE is a SQLite file's path or a postgres:// URL.
//
//   tracked-increment-helper increment DATABASE ID TIMES [EVERY]
//                                                      increments rows.count of row ID, flushing
//                                                      after every EVERY increments (1)
//   tracked-increment-helper increment-through DATABASE ID TIMES
//                                                      increments and flushes TIMES times, going on
//                                                      past flushes that fail (the server away: the
//                                                      changes stay pending), then flushes until
//                                                      everything is committed (up to 60 s)
//   tracked-increment-helper write-then-wait DATABASE ID  sets rows.title of row ID, flushes, prints
//                                                      "flushed", then waits to be killed
//   tracked-increment-helper use-off-actor DATABASE ID    reads the store from a task off its actor,
//                                                      which must trap
import Foundation
import TrackedModels

@Tracked(table: "rows")
final class Row {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tracked-increment-helper: \(message)\n".utf8))
    exit(64)
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count >= 3, let id = Int64(arguments[arguments.startIndex + 2]) else {
    fail("usage: increment PATH ID TIMES | increment-through DATABASE ID TIMES | write-then-wait DATABASE ID | use-off-actor PATH ID")
}
let command = arguments[arguments.startIndex]
let path = arguments[arguments.startIndex + 1]

do {
    let location: DatabaseLocation = path.hasPrefix("postgres://") ? .postgres(path) : .file(path)
    let store = try await ModelStore.open(location, models: [Row.self])
    guard let row = try await store.async.find(Row.self, key: id) else { fail("no row \(id) in \(path)") }
    switch command {
    case "increment":
        guard arguments.count >= 4, let times = Int(arguments[arguments.startIndex + 3]) else { fail("increment needs TIMES") }
        let every = arguments.count == 5 ? Int(arguments[arguments.startIndex + 4]) ?? 1 : 1
        for done in 1...times {
            try store.increment(\Row.count, of: row, by: 1)
            if done % every == 0 || done == times { try await store.flush() }
        }
        try await store.close()
    case "increment-through":
        guard arguments.count >= 4, let times = Int(arguments[arguments.startIndex + 3]) else { fail("increment-through needs TIMES") }
        for done in 1...times {
            try store.increment(\Row.count, of: row, by: 1)
            do {
                try await store.flush()
            } catch {
                FileHandle.standardError.write(Data("tracked-increment-helper: flush \(done) failed, its changes stay pending: \(error)\n".utf8))
            }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                try await store.flush()
                break
            } catch where ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        try await store.close()
    case "write-then-wait":
        row.title = "written by \(ProcessInfo.processInfo.processIdentifier)"
        try await store.flush()
        FileHandle.standardOutput.write(Data("flushed \(row.title)\n".utf8))
        while true { try await Task.sleep(for: .seconds(60)) }
    case "use-off-actor":
        // Smuggled past the compiler on purpose: the store checks its actor at run time too.
        nonisolated(unsafe) let smuggled = store
        await Task.detached { _ = try? smuggled.count(Row.self) }.value
        fail("the store answered off its actor")
    default:
        fail("unknown command \(command)")
    }
} catch {
    fail("\(error)")
}
