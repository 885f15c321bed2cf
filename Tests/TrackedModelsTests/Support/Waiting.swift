import Foundation
import Testing
import TrackedModels

/// Waits until `condition` holds, then until each store has taken in everything the database
/// had by then (`refreshExternalChanges()`): an event that would come after the one awaited (a
/// change heard twice, say) has come too. A condition that does not hold within 60 s is an
/// issue: what the store was to do on its own (a poll, a wake-up) did not happen, and no
/// refresh covers for it. (A condition that holds returns at once; the deadline is long so that
/// a machine busy with other test processes does not fail it: a full run beside a soak took
/// over 10 s to place a PostgreSQL read.)
///
/// - Parameters:
///   - within: How long the condition may take: 60 s. A test that gives it longer (one whose
///     processes all share one busy machine's cores) prints the state at 60 s, so that a slow
///     run that passes still says where it was.
///   - state: What to say of the state when the condition does not hold in time (what the
///     store shows, what the database holds), so that a failure tells a store that heard
///     nothing from one that heard a stale value.
@MainActor
func settle(
    _ stores: ModelStore..., within limit: Duration = .seconds(60), until condition: () async throws -> Bool, state: () async -> String = { "" },
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let start = ContinuousClock.now
    var saidSlow = false
    while try await !condition() {
        let waited = ContinuousClock.now - start
        guard waited < limit else {
            let said = await state()
            Issue.record("the awaited condition did not hold within \(limit)\(said.isEmpty ? "" : ": \(said)")", sourceLocation: sourceLocation)
            return
        }
        if waited >= .seconds(60), !saidSlow {
            saidSlow = true
            print("still waiting after 60 s at \(sourceLocation): \(await state())")
        }
        try await Task.sleep(for: .milliseconds(5))
    }
    for store in stores { try await store.refreshExternalChanges() }
}

/// Runs SQL in the `sqlite3` shell, another process, and expects it to succeed.
func sqlite3(_ path: String, _ sql: String) async throws {
    #expect(try await Helper.run([path, sql], executable: Helper.sqlite3) == 0)
}
