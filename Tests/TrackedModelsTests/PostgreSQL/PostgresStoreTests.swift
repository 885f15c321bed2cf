import Foundation
import Synchronization
import Logging
import PostgresTestSupport
import Testing
@testable import TrackedModels

/// The store on PostgreSQL: what it writes is in the server, another store (another process:
/// `psql`) sees and is heard, reads are awaited, and bad input fails clearly.
@MainActor
@Suite(.enabled(if: PostgresServer.isEnabled, "no PostgreSQL server: set TRACKEDMODELS_POSTGRES_URL, or install PostgreSQL's server (apt-get install postgresql)"))
struct PostgresStoreTests {
    static func open(_ url: String, models: [any TrackedModel.Type] = [Row.self]) async throws -> ModelStore {
        try await ModelStore.open(.postgres(url), models: models, configuration: Stores.configuration())
    }

    /// A store that looks at the change log only when a test asks: no doorbell, a poll an hour apart.
    static func openWithoutLooking(_ url: String) async throws -> ModelStore {
        var configuration = Stores.configuration()
        configuration.externalChangePollInterval = .seconds(3_600)
        configuration.wakesOnFileChanges = false
        return try await ModelStore.open(.postgres(url), models: [Row.self], configuration: configuration)
    }

    @Test func whatAStoreFlushesIsInTheServerAndAnotherStoreFetchesIt() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...5).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 3))
        row.title = "Renamed"
        try store.increment(\Row.count, of: row, by: 4)
        try await store.flush()
        #expect(try await PostgresServer.psql(url, "SELECT title, count FROM rows WHERE id = 3") == "Renamed|4")

        let other = try await Self.open(url)
        let fetched = try await other.async.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }))
        #expect(fetched.map(\.id) == [3])
        #expect(fetched.first?.title == "Renamed")
        #expect(try await other.async.fetchCount(FetchDescriptor<Row>()) == 5)
        try await other.close()
        try await store.close()
    }

    /// A commit of one update is three round trips: `BEGIN` with the look at the change log,
    /// which also gives the transaction its id; the `UPDATE`; `COMMIT`. A store that does not
    /// look sends what gives the transaction its id with `BEGIN`, and its answer comes with the
    /// `UPDATE`'s: two. (The fewest of several in a row, less the round trip of recording the
    /// store's place in the log after some of them.)
    @Test(arguments: [true, false]) func aCommitOfOneUpdateTakesThreeRoundTripsOrTwoWithoutALook(looks: Bool) async throws {
        let url = try await PostgresServer.makeDatabase()
        // No look but the commit's own: no polling, no doorbell (which its own commit rings).
        var configuration = Stores.configuration()
        configuration.externalChangePollInterval = .seconds(3_600)
        configuration.wakesOnFileChanges = false
        configuration.observesExternalChanges = looks
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: configuration)
        try store.insert(Row(id: 1, title: "Row 1", count: 0))
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 1))
        func counts() throws -> (statements: [String: Int], waits: Int)? {
            try store.worker.withEngine { (($0 as! PostgreSQLWriter).statementsSent, ($0 as! PostgreSQLWriter).roundTrips) }
        }
        var sent: [[String: Int]] = []
        var waits: [Int] = []
        for _ in 0..<4 {
            let before = try #require(try counts())
            try store.increment(\Row.count, of: row, by: 1)
            try await store.flush()
            let after = try #require(try counts())
            sent.append(after.statements.merging(before.statements) { $0 - $1 }.filter { $0.value > 0 })
            waits.append(after.waits - before.waits)
        }
        // Recording the store's place in the log, once a second, is not the commit's: a
        // statement waited for on its own, it is a round trip of its own (under load, with
        // commits more than a second apart, each commit is followed by one).
        let recording = "recording the change log position"
        let commits = sent.map { $0.filter { $0.key != recording }.values.reduce(0, +) }
        let commitWaits = zip(waits, sent).map { $0 - ($1[recording] ?? 0) }
        // BEGIN, the look or the id, the UPDATE, COMMIT.
        #expect(commits.min() == 4, "statements per commit: \(sent)")
        #expect(commitWaits.min() == (looks ? 3 : 2), "round trips per commit: \(waits), statements \(sent)")
        #expect(try await PostgresServer.psql(url, "SELECT count FROM rows WHERE id = 1") == "4")
        try await store.close()
    }

    /// A look that hears another connection's commit to one table takes two round trips (the
    /// log, then the rows), one that finds nothing takes one; recording the store's place in the
    /// log, once a second, is not part of a look (what the look found does not wait for it) but
    /// comes after, when the worker tidies the log.
    @Test func recordingThePlaceInTheLogIsNotPartOfALook() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.openWithoutLooking(url)
        try store.insert(contentsOf: (1...3).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        func counts() throws -> (waits: Int, records: Int)? {
            try store.worker.withEngine { engine in
                let writer = engine as! PostgreSQLWriter
                return (writer.roundTrips, writer.statementsSent["recording the change log position", default: 0])
            }
        }
        for round in 1...3 {
            try await PostgresServer.psql(url, "UPDATE rows SET count = \(round) WHERE id = 2; INSERT INTO rows (id, title, count) VALUES (\(10 + round), 'New', 0)")
            // Recording is due.
            try await Task.sleep(for: .milliseconds(1_100))
            let before = try #require(try counts())
            let batch = try store.worker.withEngine { try $0.readChangeLog(answeringSignal: false) }
            let looked = try #require(try counts())
            #expect(batch??.rows.map(\.key) == [.integer(2), .integer(Int64(10 + round))])
            #expect(looked.waits - before.waits == 2, "round trips of a look that found a commit: \(looked.waits - before.waits)")
            #expect(looked.records == before.records, "a look recorded the store's place in the log")
            _ = try store.worker.withEngine { try $0.readChangeLog(answeringSignal: false) }
            let again = try #require(try counts())
            #expect(again.waits - looked.waits == 1, "round trips of a look that found nothing: \(again.waits - looked.waits)")
            try store.worker.withEngine { $0.tidyChangeLog() }
            let tidied = try #require(try counts())
            #expect(tidied.records == again.records + 1)
        }
        try await store.close()
    }

    /// A store that commits and does not poll (for an hour here) still records its place in the
    /// log after its commits, so that other stores do not take it for gone and prune past it.
    @Test func aStoreThatOnlyCommitsKeepsItsPlaceInTheLog() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.openWithoutLooking(url)
        let row = Row(id: 1, title: "Row 1", count: 0)
        try store.insert(row)
        try await store.flush()
        func lastSeen() async throws -> Double {
            try #require(Double(try await PostgresServer.psql(url, "SELECT extract(epoch FROM max(seen)) FROM trackedmodels_readers").trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let first = try await lastSeen()
        // Recording is due again.
        try await Task.sleep(for: .milliseconds(1_100))
        row.count += 1
        try await store.flush()
        let deadline = ContinuousClock.now + .seconds(10)
        var seen = try await lastSeen()
        while seen <= first, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            seen = try await lastSeen()
        }
        #expect(seen > first, "the store's place in the log was not recorded after its commit")
        try await store.close()
    }

    /// Updates of many rows that set and add the same columns go as one statement; a row
    /// another connection deleted meanwhile is still refused alone, naming it, and the rest
    /// commit.
    @Test func updatesOfManyRowsGoAsOneStatement() async throws {
        let url = try await PostgresServer.makeDatabase()
        // Deaf until it commits: a store that heard the delete of row 150 before its flush would
        // drop the row's pending update (as it must), and the flush would have nothing to refuse.
        var quiet = Stores.configuration()
        quiet.externalChangePollInterval = .seconds(3_600)
        quiet.wakesOnFileChanges = false
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: quiet)
        try store.insert(contentsOf: (1...300).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let rows = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        let before = try #require(try store.worker.withEngine { ($0 as! PostgreSQLWriter).statementsSent["updating rows", default: 0] })
        for row in rows {
            row.title = "Batched \(row.id)"
            try store.increment(\Row.count, of: row, by: Int(row.id))
        }
        try await PostgresServer.psql(url, "DELETE FROM rows WHERE id = 150")
        do {
            try await store.flush()
            Issue.record("the update of a deleted row did not fail the flush")
        } catch let error as StoreError {
            #expect(error.code == .changeRejected)
            #expect(error.message.contains("the database refused to update rows 150:"), "\(error)")
        }
        #expect(store.pendingChanges.count == 1)
        let sent = try #require(try store.worker.withEngine { ($0 as! PostgreSQLWriter).statementsSent["updating rows", default: 0] }) - before
        // One statement for a thousand rows at most, and again after the refusal.
        #expect(sent <= 2, "\(sent) statements updated 300 rows")
        #expect(try await PostgresServer.psql(url, "SELECT count(*), sum(count), count(*) FILTER (WHERE title LIKE 'Batched %') FROM rows") == "299|45000|299")
        #expect(rows.first { $0.id == 7 }?.count == 7)
        store.discardPendingChanges()

        // A batch the database refuses as a whole (a CHECK that row 300 breaks) is made again row
        // by row: the refusal is that row's alone, and the others commit.
        try await PostgresServer.psql(url, "ALTER TABLE rows ADD CONSTRAINT below_301 CHECK (count < 301)")
        for row in rows where row.id != 150 { try store.increment(\Row.count, of: row, by: 1) }
        do {
            try await store.flush()
            Issue.record("the CHECK constraint did not fail the flush")
        } catch let error as StoreError where error.code == .changeRejected {
            #expect(error.constraint == .check)
            #expect(error.message.contains("rows 300"), "\(error)")
        }
        #expect(store.pendingChanges.map(\.operations) == [["update rows 300: count += 1"]])
        #expect(try await PostgresServer.psql(url, "SELECT sum(count), (SELECT count FROM rows WHERE id = 300) FROM rows") == "\(45_000 + 298)|300")
        #expect(rows.first { $0.id == 7 }?.count == 8)
        store.discardPendingChanges()
        try await store.close()
    }

    @Test func fetchCountsChangesNotYetFlushed() async throws {
        let store = try await Self.open(try await PostgresServer.makeDatabase())
        try store.insert(contentsOf: (1...4).map { Row(id: $0, title: "Row \($0)", count: Int($0)) })
        try await store.flush()
        let rows = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        rows[0].count = 100
        try store.delete(rows[1])
        try store.insert(Row(id: 9, title: "Row 9", count: 50))
        let busy = try await store.async.fetch(FetchDescriptor<Row>(predicate: #Predicate { $0.count > 3 }, sortBy: [SortDescriptor(\.count, order: .reverse)]))
        #expect(busy.map(\.id) == [1, 9, 4])
        #expect(try await store.async.fetchCount(FetchDescriptor<Row>()) == 4)
        #expect(try await store.async.find(Row.self, key: 2) == nil)
        // Raw SQL, in PostgreSQL's dialect, over the table as this store sees it.
        let raw = try await store.async.fetch(Row.self, where: "count > $1", [3], orderBy: "count DESC")
        #expect(raw.map(\.id) == [1, 9, 4])
        #expect(raw.first === rows[0])
        #expect(try await store.async.count(Row.self, where: "title LIKE $1", ["Row %"]) == 4)
        try await store.close()
    }

    @Test func aSynchronousReadSaysToAwait() async throws {
        let store = try await Self.open(try await PostgresServer.makeDatabase())
        #expect { try store.fetch(FetchDescriptor<Row>()) } throws: { ($0 as? StoreError)?.code == .asyncReadRequired }
        #expect { try ModelStore(.postgres("postgres://localhost/x"), models: [Row.self]) } throws: { ($0 as? StoreError)?.code == .asyncReadRequired }
        try await store.close()
    }

    @Test func anotherConnectionsCommitIsHeardCellPrecise() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...3).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 2))
        var heard: [ChangeEvent] = []
        let token = try store.subscribe(to: .object(row, \Row.count)) { heard.append($0) }
        var titles = 0
        let titleToken = try store.subscribe(to: .object(row, \Row.title)) { _ in titles += 1 }
        try await PostgresServer.psql(url, "UPDATE rows SET count = 7 WHERE id = 2; UPDATE rows SET title = 'elsewhere' WHERE id = 3")
        try await settle(store) { !heard.isEmpty }
        #expect(heard.count == 1)
        #expect(heard.first?.origin == .external)
        #expect(heard.first?.change(of: \Row.count).map { [$0.old, $0.new] } == [0, 7])
        #expect(row.count == 7)
        #expect(titles == 0)
        token.cancel()
        titleToken.cancel()
        try await store.close()
    }

    @Test func aStoresOwnCommitIsNotHeardAsAnothers() async throws {
        let store = try await Self.open(try await PostgresServer.makeDatabase())
        try store.insert(Row(id: 1, title: "Row 1", count: 0))
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 1))
        var external = 0
        let token = try store.subscribe(to: .object(row, \Row.count)) { if $0.origin == .external { external += 1 } }
        for _ in 0..<5 { try store.increment(\Row.count, of: row) }
        try await store.flush()
        try await store.refreshExternalChanges()
        try await Task.sleep(for: .milliseconds(300))
        #expect(external == 0)
        #expect(row.count == 5)
        token.cancel()
        try await store.close()
    }

    @Test func twoStoresIncrementingOneRowLoseNothing() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try await Self.open(url)
        try first.insert(Row(id: 1, title: "Row 1", count: 0))
        try await first.flush()
        let second = try await Self.open(url)
        let a = try #require(try await first.async.find(Row.self, key: 1))
        let b = try #require(try await second.async.find(Row.self, key: 1))
        for round in 0..<20 {
            for _ in 0..<25 {
                try first.increment(\Row.count, of: a)
                try second.increment(\Row.count, of: b)
            }
            if round % 2 == 0 { try await first.flush() } else { try await second.flush() }
        }
        try await first.flush()
        try await second.flush()
        #expect(try await PostgresServer.psql(url, "SELECT count FROM rows WHERE id = 1") == "1000")
        try await second.refreshExternalChanges()
        try await first.refreshExternalChanges()
        try await settle(first, second) { a.count == 1000 && b.count == 1000 }
        #expect(a.count == 1000)
        #expect(b.count == 1000)
        try await first.close()
        try await second.close()
    }

    @Test func liveResultsFollowAnotherConnectionsCommits() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...6).map { Row(id: $0, title: "Row \($0)", count: Int($0)) })
        try await store.flush()
        let busy = try await store.async.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 3 }, sortBy: [SortDescriptor(\.count)]))
        #expect(busy.map(\.id) == [4, 5, 6])
        try await PostgresServer.psql(url, "UPDATE rows SET count = 10 WHERE id = 1; UPDATE rows SET count = 0 WHERE id = 5")
        try await settle(store) { busy.map(\.id) == [4, 6, 1] }
        #expect(busy.map(\.id) == [4, 6, 1])
        try await store.close()
    }

    /// A row a discarded delete brings back is announced once read from the server. When that
    /// read fails, the program is told on `writeErrors` (its subscribers were not told), and
    /// live lists judge the row again: they agree with a fresh fetch once the store settles.
    @Test func aRestoredRowThatCannotBeReadIsReportedAndJudgedAgain() async throws {
        let url = try await PostgresServer.makeDatabase()
        let fault = FaultSlot()
        var configuration = Stores.configuration()
        configuration.faultBeforeRead = { [fault] in fault.take() }
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: configuration)
        try store.insert(contentsOf: (1...3).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let all = try await store.async.results(for: FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        let reported = Mutex<[String]>([])
        let listening = Task { [errors = store.writeErrors] in
            for await error in errors { reported.withLock { $0.append(error.message) } }
        }
        defer { listening.cancel() }
        do {
            // Let go of the row's object: the row comes back without one, and must be read.
            let row = try #require(try await store.async.find(Row.self, key: 2))
            try store.delete(row)
        }
        try await store.refreshExternalChanges()
        #expect(all.map(\.id) == [1, 3])
        fault.arm(StoreError(code: .engineFailure, message: "injected read failure"))
        try store.discard(try #require(store.pendingChanges.last))
        let told = { reported.withLock { $0.contains { $0.contains("came back when its pending changes were discarded, but it could not be read") } } }
        try await settle(store) { told() }
        #expect(told())
        #expect(all.map(\.id) == [1, 2, 3])
        #expect(try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)])).map(\.id) == [1, 2, 3])
        try await store.close()
    }

    @Test func aTerminatedDoorbellLosesNoCommit() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(Row(id: 1, title: "Row 1", count: 0))
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 1))
        // The doorbell listens on a connection of its own, made when the store starts.
        try await settle(store) {
            try await PostgresServer.psql(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'trackedmodels doorbell' AND datname = current_database() AND query LIKE 'LISTEN%'") == "1"
        }
        let terminated = try await PostgresServer.psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'trackedmodels doorbell' AND datname = current_database()")
        #expect(terminated == "1")
        try await PostgresServer.psql(url, "UPDATE rows SET count = 42 WHERE id = 1")
        try await settle(store) { row.count == 42 }
        #expect(row.count == 42)
        try await store.close()
    }

    @Test func badURLsAndCredentialsFailNamingTheServer() async throws {
        let server = try PostgresServer.server.get()
        await #expect { _ = try await Self.open("mysql://localhost/x") } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .cannotOpen && error.message.contains("scheme")
        }
        await #expect { _ = try await Self.open(try PostgresServer.url(user: "tracked", password: "wrong")) } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .accessDenied && error.message.contains("credentials") && error.message.contains("\(server.host!):\(server.port!)")
        }
        await #expect { _ = try await Self.open("postgres://tracked:tracked@127.0.0.1:1/tracked") } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .connectionLost && error.message.contains("127.0.0.1:1/tracked")
        }
        var missing = server
        missing.path = "/no_such_database"
        await #expect { _ = try await Self.open(missing.string!) } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .cannotOpen && error.message.contains("no_such_database")
        }
    }

    @Test func aTableThatDoesNotFitIsRefusedAndLeftAlone() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await PostgresServer.psql(url, "CREATE TABLE rows (id BIGINT PRIMARY KEY, title BYTEA, count TEXT)")
        await #expect { _ = try await ModelStore.open(.postgres(url), models: [Row.self]) } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .schemaMismatch && error.differences.count == 4
        }
        #expect(try await PostgresServer.psql(url, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'trackedmodels%'") == "0")
    }

    /// Types that would change what the store writes are refused at open, saying what to
    /// declare: `character(n)` pads text, and a key `GENERATED ALWAYS` refuses the keys given.
    @Test func typesThatWouldChangeWhatIsStoredAreRefused() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await PostgresServer.psql(url, "CREATE TABLE rows (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, title CHARACTER(5) NOT NULL, count BIGINT NOT NULL)")
        await #expect { _ = try await ModelStore.open(.postgres(url), models: [Row.self]) } throws: { error in
            let error = try #require(error as? StoreError)
            let problems = error.differences.map(\.problem)
            return error.code == .schemaMismatch && problems.count == 2
                && problems.contains { $0.contains("GENERATED BY DEFAULT AS IDENTITY") } && problems.contains { $0.contains("declare it TEXT") }
        }
    }

    /// `numeric` comes back as the number it is: whole ones that fit as integers, others as the
    /// nearest Double (also past Decimal's exponent range), infinities as such, NaN as NULL.
    @Test func numericValuesReadBackExactly() async throws {
        let session = try await PostgresSession.connect(try PostgresEndpoint(url: try await PostgresServer.makeDatabase()), role: "test", logger: .init(label: "test"))
        defer { session.close() }
        let row = try #require(try await session.rows("""
            SELECT 0::numeric, -12::numeric, 9223372036854775807::numeric, 9223372036854775808::numeric, 0.1::numeric,
                   1.7976931348623157e308::numeric, 5e-324::numeric, -2.5::numeric, 'Infinity'::numeric, '-Infinity'::numeric,
                   'NaN'::numeric, 100000000::numeric, 123.000::numeric
            """, doing: "reading numbers").first)
        #expect(row == [
            .integer(0), .integer(-12), .integer(.max), .real(9223372036854775808), .real(0.1),
            .real(.greatestFiniteMagnitude), .real(.leastNonzeroMagnitude), .real(-2.5), .real(.infinity), .real(-.infinity),
            .null, .integer(100_000_000), .integer(123),
        ])
    }

    @Test func liveResultsThroughAToOneFollowAnotherConnectionsChangeOfTheTarget() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url, models: [TodoList.self, Entry.self])
        let groceries = TodoList(id: 1, title: "Groceries")
        let chores = TodoList(id: 2, title: "Chores")
        try store.insert(Entry(id: 1, title: "Milk", list: groceries))
        try store.insert(Entry(id: 2, title: "Eggs", list: groceries))
        try store.insert(Entry(id: 3, title: "Sweep", list: chores))
        try await store.flush()
        let live = try await store.async.results(for: FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Chores" }, sortBy: [SortDescriptor(\.id)]))
        #expect(live.map(\.id) == [3])
        try await PostgresServer.psql(url, "UPDATE lists SET title = 'Chores' WHERE id = 1; UPDATE lists SET title = 'Done' WHERE id = 2")
        try await settle(store) { live.map(\.id) == [1, 2] }
        #expect(live.map(\.id) == [1, 2])
        let fresh = try await store.async.fetch(FetchDescriptor<Entry>(predicate: #Predicate { $0.list?.title == "Chores" }, sortBy: [SortDescriptor(\.id)]))
        #expect(fresh.map(\.id) == live.map(\.id))
        try await store.close()
    }

    @Test func liveResultsReloadAfterAnotherConnectionEmptiesTheTable() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...4).map { Row(id: $0, title: "Row \($0)", count: 1) })
        try await store.flush()
        let live = try await store.async.results(for: FetchDescriptor<Row>(predicate: #Predicate { $0.count > 0 }, sortBy: [SortDescriptor(\.id)]))
        #expect(live.count == 4)
        try await PostgresServer.psql(url, "TRUNCATE rows; INSERT INTO rows VALUES (9, 'Row 9', 5)")
        try await settle(store) { live.map(\.id) == [9] }
        #expect(live.map(\.id) == [9])
        try await store.close()
    }

    @Test func aRefusedChangeAmongPipelinedOnesStaysPendingAndTheRestCommit() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await PostgresServer.psql(url, "CREATE TABLE rows (id BIGINT PRIMARY KEY, title TEXT NOT NULL, count BIGINT NOT NULL CHECK (count < 100))")
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...3).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let rows = try await store.async.fetch(FetchDescriptor<Row>(sortBy: [SortDescriptor(\.id)]))
        rows[0].count = 5
        rows[1].count = 500
        rows[2].count = 7
        do {
            try await store.flush()
            Issue.record("the CHECK constraint did not fail the flush")
        } catch let error as StoreError where error.code == .changeRejected {
            #expect(error.constraint == .check)
            #expect(error.message.contains("rows_count_check"))
        }
        #expect(store.pendingChanges.map(\.operations) == [["update rows 2: count = 500"]])
        #expect(try await PostgresServer.psql(url, "SELECT string_agg(count::text, ',' ORDER BY id) FROM rows") == "5,0,7")
        rows[1].count = 50
        try await store.flush()
        #expect(try await PostgresServer.psql(url, "SELECT string_agg(count::text, ',' ORDER BY id) FROM rows") == "5,50,7")
        try await store.close()
    }
}

/// Defects the reference-model test found on PostgreSQL, each pinned by the smallest program.
extension PostgresStoreTests {
    private static func itemsTable(_ url: String, title: String = "TEXT", score: String = "DOUBLE PRECISION") async throws {
        try await PostgresServer.psql(url, """
            CREATE TABLE items (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, title \(title) NOT NULL, count BIGINT NOT NULL,
                note TEXT, score \(score) NOT NULL, payload BYTEA, flag BIGINT NOT NULL, link_id BIGINT)
            """)
    }

    /// A review found it: `numeric(10,2)` rounds the Double it is given, and the check, reading
    /// the type without its scale, took it; plain `numeric` and `varchar(6)` stay accepted.
    @Test func aNumericWithAScaleIsRefusedForADouble() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url, title: "VARCHAR(6)", score: "NUMERIC(10,2)")
        await #expect { _ = try await ModelStore.open(.postgres(url), models: [Item.self]) } throws: { error in
            let error = try #require(error as? StoreError)
            return error.code == .schemaMismatch && error.differences.map(\.column) == ["score"]
        }
        let plain = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(plain, title: "VARCHAR(6)", score: "NUMERIC")
        try await ModelStore.open(.postgres(plain), models: [Item.self]).close()
    }

    /// Found by the reference-model test: PostgreSQL cuts the excess of a `VARCHAR(n)` value
    /// when it is all spaces, so the row held other text than the object. The store refuses it
    /// as PostgreSQL refuses any other overlong text, in an insert and in an update.
    @Test func textLongerThanItsVarcharIsRefusedAlsoWhereTheRestIsSpaces() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url, title: "VARCHAR(3)")
        try await PostgresServer.psql(url, "INSERT INTO items (id, title, count, score, flag) VALUES (1, 'one', 0, 0, 0)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        try store.insert(Self.item(2, title: "ab  "))
        await #expect { try await store.flush() } throws: { (($0 as? StoreError)?.underlying as? StoreError)?.code == .valueNotStorable }
        #expect(store.pendingChanges.count == 1)
        store.discardPendingChanges()
        let one = try #require(try await store.async.find(Item.self, key: 1))
        one.title = "one "
        await #expect { try await store.flush() } throws: { (($0 as? StoreError)?.underlying as? StoreError)?.code == .valueNotStorable }
        one.title = "uno"
        try await store.flush()
        #expect(try await PostgresServer.psql(url, "SELECT string_agg(id || ':' || title || ':' || length(title), ',' ORDER BY id) FROM items") == "1:uno:3")
        try await store.close()
    }

    private static func item(_ key: Int64?, title: String = "t") -> Item {
        Item(key: key, values: [.null, .text(title), .integer(0), .null, .real(1), .null, .integer(0), .null])
    }

    /// The statement that moves the key sequence past an inserted key ran waiting, after later
    /// statements were already sent: a refused one after it made the sequence's statement
    /// fail instead, and the whole flush with it.
    @Test func aRefusedInsertAfterAKeyedOneIsTheOneRefused() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url, title: "VARCHAR(6)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        try store.insert(Self.item(4))
        try store.insert(Self.item(3, title: "too long"))
        await #expect { try await store.flush() } throws: { error in
            (error as? StoreError)?.message.contains("id = 3") == true && store.pendingChanges.count == 1
        }
        #expect(try await PostgresServer.psql(url, "SELECT id FROM items") == "4")
        store.discardPendingChanges()
        try await store.close()
    }

    /// Another connection gave a key explicitly; the key sequence did not know it, and the
    /// store's next insert without a key collided with it and was refused.
    @Test func anInsertWithoutAKeyPassesKeysAnotherConnectionGave() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url)
        try await PostgresServer.psql(url, "INSERT INTO items (id, title, count, score, flag) VALUES (1, 'theirs', 0, 0, 0)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        let mine = Self.item(nil)
        try store.insert(mine)
        try await store.flush()
        #expect(mine.id == 2)
        try await store.close()
    }

    /// Found by the reference-model test: on an empty table, an insert without a key and then
    /// an insert of key 1 in one flush. The sequence gave the first key 1, the second collided.
    @Test func anInsertWithoutAKeyPassesKeysGivenLaterInTheSameFlush() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url)
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        let assigned = Self.item(nil)
        try store.insert(assigned)
        try store.insert(Self.item(1))
        try await store.flush()
        #expect(assigned.id == 2)
        #expect(try await PostgresServer.psql(url, "SELECT string_agg(id::text, ',' ORDER BY id) FROM items") == "1,2")
        try await store.close()
    }

    /// A connection the server ended while idle failed the next flush (and crashed a debug
    /// build: postgres-nio requires a connection to be closed before it goes).
    @Test func aFlushAfterTheServerEndedTheStoresConnectionsCommits() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(Row(id: 1, title: "one", count: 0))
        try await store.flush()
        let ended = try await PostgresServer.psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'trackedmodels%'")
        #expect(ended != "0")
        let row = try #require(try await store.async.find(Row.self, key: 1))
        row.count = 5
        try await store.flush()
        #expect(try await PostgresServer.psql(url, "SELECT count FROM rows") == "5")
        try await store.close()
    }

    /// A delete rule needs the rows and their children, which PostgreSQL is asked for: the
    /// synchronous deleteAll said to await, and the awaited one applies the rule (nullify).
    @Test func anAwaitedDeleteAllAppliesTheDeleteRule() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url)
        try await PostgresServer.psql(url, "INSERT INTO items (id, title, count, score, flag, link_id) VALUES (1, 'a', 0, 0, 0, NULL), (2, 'b', 0, 0, 0, 1)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        #expect { try store.deleteAll(Item.self) } throws: { ($0 as? StoreError)?.code == .asyncReadRequired }
        let two = try #require(try await store.async.find(Item.self, key: 2))
        try await store.async.deleteAll(Item.self)
        #expect(!two._$tracking.isAttached)
        try await store.flush()
        #expect(try await PostgresServer.psql(url, "SELECT count(*) FROM items") == "0")
        try await store.close()
    }

    /// Discarding a refused insert whose key another connection's row now holds: the discard
    /// could not read the committed row (a read there is awaited), so the live list dropped the
    /// key and never took the other connection's row.
    @Test func aDiscardedInsertGivesWayToTheCommittedRowInLiveResults() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url)
        try await PostgresServer.psql(url, "ALTER TABLE items ADD CHECK (count <> 13)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Harness.configuration)
        let list = try await store.async.results(for: FetchDescriptor<Item>(predicate: #Predicate { $0.title < "e" }))
        try store.insert(Item(key: 6, values: [.null, .text("Mine"), .integer(13), .null, .real(1), .null, .integer(0), .null]))
        await #expect(throws: StoreError.self) { try await store.flush() }
        try await PostgresServer.psql(url, "INSERT INTO items (id, title, count, score, flag) VALUES (6, 'Theirs', 0, 0, 0)")
        try await store.refreshExternalChanges()
        try store.discard(try #require(store.pendingChanges.first))
        try await store.refreshExternalChanges()
        #expect(list.keys == [6])
        #expect(list.first?.title == "Theirs")
        try await store.close()
    }

    /// A review found it: a subscriber that read something not loaded while the awaited
    /// delete's events were delivered made the delete run again (a second deleteAll, which
    /// would take rows committed in between).
    @Test func aSubscriberReadingDuringAnAwaitedDeleteDoesNotRepeatIt() async throws {
        let url = try await PostgresServer.makeDatabase()
        try await Self.itemsTable(url)
        try await PostgresServer.psql(url, "INSERT INTO items (id, title, count, score, flag, link_id) VALUES (1, 'a', 0, 0, 0, NULL), (2, 'b', 0, 0, 0, 1)")
        let store = try await ModelStore.open(.postgres(url), models: [Item.self], configuration: Stores.configuration())
        var heard = 0
        let token = try store.subscribe(to: .table(Item.self)) { _ in
            heard += 1
            _ = try? store.find(Item.self, key: 99)
        }
        try await store.async.deleteAll(Item.self)
        #expect(heard == 1)
        #expect(store.pendingChanges.count == 1)
        try await store.close()
        _ = token
    }

    /// Found by the reference-model test: a transaction left open anywhere on the server (here
    /// on another connection) held the change log's window back, so a commit made after it
    /// was not heard by `refreshExternalChanges()`. Once the open one commits, it is heard too,
    /// though it began first: commits in any order are each heard once.
    @Test func aCommitIsHeardWhileAnOlderTransactionStaysOpen() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        try store.insert(contentsOf: (1...2).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        let one = try #require(try await store.async.find(Row.self, key: 1))
        let two = try #require(try await store.async.find(Row.self, key: 2))
        var heard: [Int64: [Int]] = [:]
        let tokens = try [one, two].map { row in
            try store.subscribe(to: .object(row, \Row.count)) { _ in heard[row.id, default: []].append(row.count) }
        }
        let older = try await PostgresSession.connect(try PostgresEndpoint(url: url), role: "older transaction", logger: Logger(label: "test"))
        _ = try await older.rows("BEGIN", doing: "beginning")
        _ = try await older.rows("UPDATE rows SET count = 1 WHERE id = 1", doing: "updating")
        try await PostgresServer.psql(url, "UPDATE rows SET count = 2 WHERE id = 2")
        try await store.refreshExternalChanges()
        #expect(heard == [2: [2]])
        _ = try await older.rows("COMMIT", doing: "committing")
        older.close()
        try await store.refreshExternalChanges()
        try await store.refreshExternalChanges()
        #expect(heard == [1: [1], 2: [2]])
        tokens.forEach { $0.cancel() }
        try await store.close()
    }

    /// A store that did not look at the change log while another pruned it past what it had
    /// read (it was away longer than `changeLogReaderTimeout`) reloads its rows and says so.
    @Test func aStoreThatFellBehindThePrunedLogReloadsAndResets() async throws {
        let url = try await PostgresServer.makeDatabase()
        var quiet = Stores.configuration()
        quiet.externalChangePollInterval = .seconds(3_600)
        quiet.wakesOnFileChanges = false
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: quiet)
        try store.insert(contentsOf: (1...3).map { Row(id: $0, title: "Row \($0)", count: 0) })
        try await store.flush()
        // The store's horizon is at most the id of its inserts' transaction (read before
        // `other` opens: it may prune at once).
        let inserted = try #require(UInt64(try await PostgresServer.psql(url, "SELECT max(xid)::text FROM trackedmodels_changes").trimmingCharacters(in: .whitespacesAndNewlines)))
        let row = try #require(try await store.async.find(Row.self, key: 3))
        var events: [ChangeEvent] = []
        let token = try store.subscribe(to: .table(Row.self)) { events.append($0) }
        var hasty = Stores.configuration()
        hasty.changeLogReaderTimeout = .seconds(1)
        let other = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: hasty)
        let theirs = try #require(try await other.async.find(Row.self, key: 3))
        // The log is pruned past the store once `other` looks with no older transaction
        // running anywhere on the server (the horizon is cluster-wide): under CI's load another
        // test's transaction can hold it back for seconds, so `other` commits until the
        // pruning shows.
        var rounds = 0
        var prunedPast = false
        while !prunedPast, rounds < 60 {
            try await Task.sleep(for: .milliseconds(1_100))
            rounds += 1
            theirs.title = "round \(rounds)"
            try await other.flush()
            let pruned = try await PostgresServer.psql(url, "SELECT pruned_below::text FROM trackedmodels_changes_state WHERE id = 1")
            prunedPast = UInt64(pruned.trimmingCharacters(in: .whitespacesAndNewlines)).map { $0 > inserted } ?? false
        }
        try #require(prunedPast, "the log was not pruned past the store in 60 rounds: a transaction elsewhere on the server held the horizon")
        // Closed before the store looks: `other`, which takes a reader quiet for a second for
        // gone, would prune past the store again if a second went by between the store's look
        // and its next one (a loaded machine took that long to reload the rows), and the store
        // would rightly reset once more.
        try await other.close()
        #expect(events.isEmpty)
        try await store.refreshExternalChanges()
        try await settle(store) { row.title == "round \(rounds)" }
        #expect(events.map(\.kind) == [.reset])
        #expect(events.first?.origin == .external)
        #expect(row.title == "round \(rounds)")
        // Back in step: the next commit is heard as a change of its cell (made by psql, which
        // prunes nothing).
        try await PostgresServer.psql(url, "UPDATE rows SET count = 4 WHERE id = 3")
        try await store.refreshExternalChanges()
        #expect(events.map(\.kind) == [.reset, .update])
        #expect(row.count == 4)
        try await store.close()
        token.cancel()
    }

    /// Found by a read-only review: a long table name's trigger names were cut at 20
    /// characters, but PostgreSQL cuts names at 63 bytes. For a name of Cyrillic letters the
    /// truncate trigger's name, cut, became the row trigger's, and replaced it: the store
    /// heard no other process's insert, update or delete of the table.
    @Test func aLongTableNamePastASCIIKeepsItsRowAndTruncateTriggersApart() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await ModelStore.open(.postgres(url), models: [CyrillicOrder.self], configuration: Stores.configuration())
        try store.insert(contentsOf: [CyrillicOrder(id: 1, title: "first"), CyrillicOrder(id: 2, title: "second")])
        try await store.flush()
        let order = try #require(try await store.async.find(CyrillicOrder.self, key: 1))
        try await PostgresServer.psql(url, "UPDATE \"заказы_покупателей_2024\" SET title = 'changed' WHERE id = 1")
        try await settle(store) { order.title == "changed" }
        try await PostgresServer.psql(url, "TRUNCATE \"заказы_покупателей_2024\"")
        try await settle(store) { try await store.async.count(CyrillicOrder.self) == 0 }
        let triggers = try await PostgresServer.psql(url, "SELECT count(*) FROM pg_trigger WHERE tgrelid = '\"заказы_покупателей_2024\"'::regclass AND tgname LIKE 'trackedmodels%'")
        #expect(triggers == "2")
        try await store.close()
    }

    /// Found by the reference-model test (CI, stop 49): a pending row's text went into a read's
    /// array literal with its quotes and backslashes escaped character by character. A quote
    /// that a combining mark follows (`"\u{301}`) is one `Character`, not a quote: it went in
    /// unescaped and the read failed with "malformed array literal".
    @Test func pendingTextWhoseQuoteAMarkFollowsIsReadAsWritten() async throws {
        let url = try await PostgresServer.makeDatabase()
        let store = try await Self.open(url)
        let titles = ["\"\u{301}x", "\\\u{301}", "a\"\u{301}\"", "'\u{301}", "{\u{301}},"]
        try store.insert(contentsOf: titles.enumerated().map { Row(id: Int64($0.offset + 1), title: $0.element, count: 0) })
        let pending = try await store.async.fetch(Row.self, orderBy: "id")
        #expect(pending.map { Array($0.title.unicodeScalars) } == titles.map { Array($0.unicodeScalars) })
        try await store.flush()
        let other = try await Self.open(url)
        let stored = try await other.async.fetch(Row.self, orderBy: "id")
        #expect(stored.map { Array($0.title.unicodeScalars) } == titles.map { Array($0.unicodeScalars) })
        try await other.close()
        try await store.close()
    }

    /// Found in CI: the rows of changes not yet committed went into a read's statement in a
    /// set's order, which differs from one set to the next; an awaited read, whose answers were
    /// found by their statement, met a new statement each round and never settled. (Answers are
    /// now taken by read and by row, but the read must still settle and agree.)
    @Test func aReadOverPendingRowsSettlesWhateverOrderTheyCameIn() async throws {
        let url = try await PostgresServer.makeDatabase()
        let first = try await Self.open(url)
        let second = try await Self.open(url)
        let keys = Array(Int64(1)...16)
        try first.insert(contentsOf: keys.map { Row(id: $0, title: "Row \($0)", count: 0) })
        try second.insert(contentsOf: keys.reversed().map { Row(id: $0, title: "Row \($0)", count: 0) })
        for store in [first, second] {
            #expect(try await store.async.fetch(Row.self, orderBy: "id").map(\.id) == keys)
            #expect(try await store.async.count(Row.self) == keys.count)
        }
        first.discardPendingChanges()
        second.discardPendingChanges()
        try await first.close()
        try await second.close()
    }
}

/// A table whose name, 23 characters, is 40 bytes: past the 63 bytes a trigger's name may take
/// with the store's prefix and suffixes.
@Tracked(table: "заказы_покупателей_2024")
final class CyrillicOrder {
    @PrimaryKey var id: Int64
    var title: String
}
