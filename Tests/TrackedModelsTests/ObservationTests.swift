import Observation
import Testing
import TrackedModels

@MainActor
@Suite struct ObservationTests {
    final class Counter: @unchecked Sendable {
        var fired = 0
    }

    @Test func withObservationTrackingFiresOnceForTheReadPropertyOnly() async throws {
        let store = try await Stores.rows(2)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        let counter = Counter()
        withObservationTracking {
            _ = row.count
        } onChange: {
            counter.fired += 1
        }
        row.title = "not observed"
        #expect(counter.fired == 0)
        row.count = 1
        #expect(counter.fired == 1)
        row.count = 2  // tracking fires once, as with @Observable
        #expect(counter.fired == 1)
    }

    @Test func anEqualValueDoesNotFireObservation() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        let counter = Counter()
        withObservationTracking { _ = row.count } onChange: { counter.fired += 1 }
        row.count = 0
        #expect(counter.fired == 0)
    }

    @Test func transientPropertiesAreObservableButNotStored() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        var heard = 0
        let token = try store.subscribe(to: .object(row)) { _ in heard += 1 }
        let counter = Counter()
        withObservationTracking { _ = row.isSelected } onChange: { counter.fired += 1 }
        row.isSelected = true
        #expect(counter.fired == 1)
        #expect(heard == 0)
        #expect(!store.hasPendingChanges)
        token.cancel()
    }
}
