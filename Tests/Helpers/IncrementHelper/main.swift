// A helper process for the cross-process tests of TrackedModelsTests.
//
//   tracked-increment-helper increment PATH ID TIMES   increments rows.count of row ID, flushing each time
//   tracked-increment-helper write-then-wait PATH ID   sets rows.title of row ID, flushes, prints
//                                                      "flushed", then waits to be killed
//   tracked-increment-helper use-off-actor PATH ID     reads the store from a task off its actor,
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
    fail("usage: increment PATH ID TIMES | write-then-wait PATH ID | use-off-actor PATH ID")
}
let command = arguments[arguments.startIndex]
let path = arguments[arguments.startIndex + 1]

do {
    let store = try ModelStore(.file(path), models: [Row.self])
    guard let row = try store.find(Row.self, key: id) else { fail("no row \(id) in \(path)") }
    switch command {
    case "increment":
        guard arguments.count == 4, let times = Int(arguments[arguments.startIndex + 3]) else { fail("increment needs TIMES") }
        for _ in 0..<times {
            try store.increment(\Row.count, of: row, by: 1)
            try await store.flush()
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
