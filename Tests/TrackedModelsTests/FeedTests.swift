import AsyncAlgorithms
import Testing
import TrackedModels

@MainActor
@Suite struct FeedTests {
    @Test func scopesReachTheirSubscribersOnly() async throws {
        let store = try await Stores.rows(3)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var heard: [String] = []
        let tokens = try [
            store.subscribe(to: .row(Int64(1), of: Row.self)) { heard.append("row 1 \($0.changes.map(\.column))") },
            store.subscribe(to: .row(Int64(1), \Row.title)) { heard.append("row 1 title \($0.changes.map(\.column))") },
            store.subscribe(to: .column(\Row.title)) { heard.append("titles \($0.key)") },
            store.subscribe(to: .table(Row.self)) { heard.append("table \($0.key)") },
        ]
        rows[1].count = 1
        rows[2].title = "x"
        rows[0].isSelected = true
        #expect(heard == ["row 1 [\"count\"]", "table 1", "titles 2", "table 2"])
        #expect(tokens.allSatisfy { $0.isActive })
    }

    /// A scope that names a column twice registered the subscription twice under that column,
    /// so each change of it was delivered twice to the same handler.
    @Test func aScopeNamingAColumnTwiceHearsEachChangeOnce() async throws {
        let store = try await Stores.rows(2)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var heard: [String] = []
        let tokens = try [
            store.subscribe(to: .row(Int64(1), \Row.count, \Row.count)) { heard.append("row 1 \($0.changes.map(\.column))") },
            store.subscribe(to: .column(\Row.title, \Row.title)) { heard.append("titles \($0.key)") },
        ]
        rows[1].count = 5
        rows[0].title = "x"
        #expect(heard == ["row 1 [\"count\"]", "titles 0"])
        withExtendedLifetime(tokens) {}
    }

    @Test func transactionsReportTheNetChangePerRow() async throws {
        let store = try await Stores.rows(2)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var events: [ChangeEvent] = []
        let token = try store.subscribe(to: .table(Row.self)) { events.append($0) }
        try store.transaction {
            rows[0].title = "changed"
            rows[0].count = 5
            rows[1].title = "temporary"
            rows[1].title = "Row 1"  // changed back: no change
            rows[0].count = 6
        }
        #expect(events.count == 1)
        #expect(events[0].key == 0)
        #expect(events[0].changes.map(\.column) == ["title", "count"])
        #expect(events[0].change(of: \Row.count)! == (old: 0, new: 6))
        #expect(events[0].change(of: \Row.title)! == (old: "Row 0", new: "changed"))
        #expect(events[0].changed(\Row.count))
        #expect(!events[0].changed(\Row.id))
        token.cancel()
    }

    @Test func aThrowingTransactionIsUndoneAndUnheard() async throws {
        struct Abort: Error {}
        let store = try await Stores.rows(2)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var heard = 0
        let token = try store.subscribe(to: .table(Row.self)) { _ in heard += 1 }
        #expect(throws: Abort.self) {
            try store.transaction {
                rows[0].count = 5
                try store.delete(rows[1])
                throw Abort()
            }
        }
        #expect(heard == 0)
        #expect(rows[0].count == 0)
        #expect(!store.hasPendingChanges)
        #expect(try store.find(Row.self, key: Int64(1)) === rows[1])
        _ = token
    }

    @Test func anInnerTransactionThatThrowsUndoesOnlyItsOwnChanges() async throws {
        struct Abort: Error {}
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        var events: [ChangeEvent] = []
        let token = try store.subscribe(to: .object(row)) { events.append($0) }
        try store.transaction {
            row.count = 1
            try? store.transaction {
                row.title = "inner"
                throw Abort()
            }
        }
        #expect(row.title == "Row 0")
        #expect(events.count == 1)
        #expect(events[0].changes.map(\.column) == ["count"])
        try await store.flush()
        #expect(try store.count(Row.self, where: "title = 'Row 0' AND count = 1") == 1)
        _ = token
    }

    @Test func transactionChangesCommitInOneTransaction() async throws {
        let store = try await Stores.rows(10)
        let rows = try store.fetch(Row.self)
        let before = store.writerStatistics.commits
        try store.transaction {
            for row in rows { row.count = 3 }
        }
        try await store.flush()
        #expect(store.writerStatistics.commits - before == 1)
    }

    @Test func dependencyCaptureSubscribesToWhatWasRead() async throws {
        let store = try await Stores.rows(3)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var fired: [ChangeEvent] = []
        let (text, token) = store.withTracking {
            "\(rows[0].title) \(rows[1].count)"
        } onChange: { fired.append($0) }
        #expect(text == "Row 0 0")
        rows[0].count = 1  // not read
        rows[2].title = "x"  // not read
        #expect(fired.isEmpty)
        rows[1].count = 2
        rows[1].count = 3  // one-shot: already fired
        #expect(fired.count == 1)
        #expect(fired[0].change(of: \Row.count)! == (old: 0, new: 2))
        #expect(!token.isActive)
    }

    @Test func dependencyCaptureReArmsWithTheNewReads() async throws {
        let store = try await Stores.rows(2)
        let rows = try store.fetch(Row.self, orderBy: "id")
        var renders: [String] = []
        var token: FeedToken?
        func render() {
            let (text, next) = store.withTracking {
                rows[0].count == 0 ? rows[0].title : rows[1].title
            } onChange: { _ in render() }
            token = next
            renders.append(text)
        }
        render()
        rows[0].count = 1  // re-renders; now reads rows[1].title instead of rows[0].title
        rows[0].title = "ignored now"
        rows[1].title = "seen"
        #expect(renders == ["Row 0", "Row 1", "seen"])
        _ = token
    }

    @Test func asyncSequenceDeliversEventsAndEndsWithTheStore() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        let stream = try store.changes(.object(row, \Row.count))
        row.count = 1
        row.count = 2
        try await store.close()
        var values: [Int] = []
        for await event in stream { values.append(event.change(of: \Row.count)!.new) }
        #expect(values == [1, 2])
    }

    @Test func aDebouncedSubscriberGetsABoundedNumberOfEventsWithTheLatestValue() async throws {
        let store = try await Stores.rows(1)
        let row = try #require(try store.find(Row.self, key: Int64(0)))
        let debounced = try store.changes(.object(row, \Row.count))
            .debounce(for: .milliseconds(20), clock: .continuous)
        let consumer = Task { @MainActor in
            var received: [Int] = []
            for await event in debounced {
                received.append(event.change(of: \Row.count)!.new)
                if received.last == 600 { break }
            }
            return received
        }
        // 600 updates in six bursts of 100, with quiet gaps longer than the debounce interval.
        for burst in 0..<6 {
            for value in 1...100 { row.count = burst * 100 + value }
            try await Task.sleep(for: .milliseconds(80))
        }
        let received = await consumer.value
        #expect(received.count >= 1)
        #expect(received.count <= 12)
        #expect(received.last == 600)
        #expect(received == received.sorted())
    }

    @Test func feedIndexLeavesNoSubscriberUnderADeadToken() async throws {
        let store = try await Stores.rows(5)
        let rows = try store.fetch(Row.self)
        var tokens: [FeedToken] = []
        for row in rows { tokens.append(try store.subscribe(to: .object(row, \Row.count, \Row.title)) { _ in }) }
        tokens.removeAll()
        #expect(store.feedSubscriptionCount == 0)
        store.checkFeedInvariants()
    }
}
