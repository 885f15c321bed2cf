import Foundation
import Testing

/// Waits until `condition` holds (or 10 s pass), then a little longer, so that an extra event
/// would have time to arrive.
@MainActor
func settle(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition(), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
    try await Task.sleep(for: .milliseconds(150))
}

/// Runs SQL in the `sqlite3` shell, another process, and expects it to succeed.
func sqlite3(_ path: String, _ sql: String) async throws {
    #expect(try await Helper.run([path, sql], executable: Helper.sqlite3) == 0)
}
