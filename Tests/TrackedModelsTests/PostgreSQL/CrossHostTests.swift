import Foundation
import PostgresTestSupport
import Synchronization
import Testing
@testable import TrackedModels

/// The PostgreSQL engine across a real network link: the server runs on a host of its own (a
/// network namespace, reached over a veth pair), and app processes on this host bump one row
/// while the server ends the watcher's doorbell, restarts, and is cut off for three seconds.
/// Every bump is counted exactly once (none lost, none applied twice), and a watcher here hears
/// the final count. The server's host also falls silent under a store's commit, before it and
/// while its `COMMIT` is answered: each commit counts once.
@MainActor
@Suite(.serialized) struct CrossHostTests {
    @Test func noAcknowledgedWriteIsLostAcrossALink() async throws {
        try await onAHostOfItsOwn(bumpAcross)
    }

    /// The server's host falls silent (its end of the link down: nothing, not even an error,
    /// comes back) as the store commits. The store's connection notices within seconds, as
    /// the URL's liveness options say, and the flush fails (it waited for the link before, some
    /// fifteen minutes for a host that never comes back); once the link is back, no transaction
    /// of the store's is left open at the server, and the change commits, once.
    @Test func aCommitToAServerThatFallsSilentFailsInSecondsAndLandsOnceAfter() async throws {
        try await onAHostOfItsOwn(commitThroughSilence)
    }

    /// Runs `body` with a server on a host of its own, removed after it.
    private func onAHostOfItsOwn(_ body: (ServerHost) async throws -> Void) async throws {
        let host = try await ServerHost.make()
        do {
            try await body(host)
        } catch {
            await host.remove()
            throw error
        }
        await host.remove()
    }

    /// A store of the server's, which notices a silent server in about three seconds, and
    /// the object of a row it committed.
    private func storeWithARow(on host: ServerHost) async throws -> (ModelStore, Row) {
        let url = host.url + "?keepalives_idle=1&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=2000"
        var configuration = Stores.configuration()
        configuration.externalChangePollInterval = .seconds(3_600)
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: configuration)
        try store.insert(Row(id: 1, title: "Row 1", count: 0))
        try await store.flush()
        return (store, try #require(try await store.async.find(Row.self, key: 1)))
    }

    private func commitThroughSilence(_ host: ServerHost) async throws {
        let (store, row) = try await storeWithARow(on: host)

        try await host.setSilent(true)
        row.count += 1
        let start = ContinuousClock.now
        let ended = Mutex<Duration?>(nil)
        let flushing = Task {
            defer { ended.withLock { $0 = ContinuousClock.now - start } }
            try await store.flush()
        }
        // Without the checks, the flush would wait for the kernel to give up (some fifteen
        // minutes): it is waited for a minute, then the link comes back.
        while ended.withLock({ $0 }) == nil, ContinuousClock.now - start < .seconds(60) { try await Task.sleep(for: .milliseconds(100)) }
        try await host.setSilent(false)
        let outcome = await flushing.result
        let waited = try #require(ended.withLock { $0 })
        switch outcome {
        case .success: Issue.record("a flush across a silent link succeeded after \(waited)")
        case .failure(let error):
            print("a flush across a silent link failed after \(waited): \(error)")
            #expect((error as? StoreError)?.code == .connectionLost, "\(error)")
            #expect(waited < .seconds(60), "the flush failed after \(waited), not within a minute")
        }

        // The server ended the session the store left (its keepalives went unanswered): no
        // transaction of the store's is open there, and the change commits, once. (Until the
        // link's neighbour entry is found again, a connection may fail: "No route to host".)
        try await settle(within: .seconds(60)) {
            (try? await PostgresServer.psql(host.url, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")) == "0"
        }
        try await store.flush()
        #expect(try await PostgresServer.psql(host.url, "SELECT count FROM rows WHERE id = 1") == "1")
        try await store.close()
    }

    /// The server's host falls silent while the store waits for its `COMMIT` (a deferred
    /// trigger holds the commit for ten seconds): the commit went through, but its answer
    /// never comes back. The store keeps asking whether it did for as long as the server
    /// cannot be reached (here 45 s), and learns it did once the link is back: the bump counts
    /// once, not again at a later flush.
    @Test func aCommitWhoseAnswerIsLostToSilenceCountsOnce() async throws {
        try await onAHostOfItsOwn(commitWhoseAnswerIsLost)
    }

    private func commitWhoseAnswerIsLost(_ host: ServerHost) async throws {
        let (store, row) = try await storeWithARow(on: host)
        try await PostgresServer.psql(host.url, """
            CREATE FUNCTION holding_the_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(10); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER holding_the_commit AFTER UPDATE ON rows DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION holding_the_commit();
            """)

        row.count += 1
        let flushing = Task { try await store.flush() }
        // The link falls silent once the commit is held at the server.
        try await settle(within: .seconds(60)) {
            try await PostgresServer.psql(host.url, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'") == "1"
        }
        try await host.setSilent(true)
        try await Task.sleep(for: .seconds(45))
        try await host.setSilent(false)
        let outcome = await flushing.result
        print("a flush whose COMMIT's answer was lost to silence: \(outcome)")
        if case .failure(let error) = outcome { Issue.record("the flush threw \(error); the commit went through") }
        try await store.flush()
        #expect(try await PostgresServer.psql(host.url, "SELECT count FROM rows WHERE id = 1") == "1")
        #expect(row.count == 1)
        try await store.close()
    }

    private func bumpAcross(_ host: ServerHost) async throws {
        let url = host.url

        var configuration = Stores.configuration()
        configuration.externalChangePollInterval = .milliseconds(250)
        let store = try await ModelStore.open(.postgres(url), models: [Row.self], configuration: configuration)
        try store.insert(Row(id: 1, title: "Row 1", count: 0))
        try await store.flush()
        let row = try #require(try await store.async.find(Row.self, key: 1))
        let heard = Mutex<[Int]>([])
        let token = try store.subscribe(to: .object(row, \Row.count)) { event in
            if let count = event.change(of: \Row.count)?.new { heard.withLock { $0.append(count) } }
        }
        // The test's processes (four app processes, the server, its restarts) share the machine
        // with every other test of a full run, in which this test took 222 s against 8 s alone:
        // past 60 s, a settle prints where it stands, and fails at three minutes.
        let patience = Duration.seconds(180)
        func count() async throws -> String { try await PostgresServer.psql(url, "SELECT count FROM rows WHERE id = 1") }
        // What a settle that gives up says: what the store shows, what it heard, what the server
        // holds, what each connection to the database is doing there, and this host's TCP
        // connections to the server (retransmissions, timers): a store that stopped looking
        // told from a connection stuck on the link.
        func state() async -> String {
            let heardLast = heard.withLock { $0.suffix(3) }
            let activity = (try? await PostgresServer.psql(url, """
                SELECT string_agg(format('%s (pid %s) %s, waiting %s/%s, for %s: %s', application_name, pid, state, \
                wait_event_type, wait_event, now() - state_change, left(query, 60)), E'\\n' ORDER BY pid) \
                FROM pg_stat_activity WHERE datname = current_database()
                """)) ?? "?"
            let sockets = (try? await ServerHost.shell("ss -tino dst \(host.address)")) ?? "?"
            return "the store shows \(row.count) (last heard \(heardLast)), the server holds \((try? await count()) ?? "?")\n"
                + "connections at the server:\n\(activity)\nTCP here:\n\(sockets)"
        }

        // Four processes at once: exact.
        let bumpers = try (0..<4).map { _ in try Helper.start(["increment", url, "1", "50", "5"]) }
        for bumper in bumpers { #expect(await bumper.exitStatus() == 0) }
        #expect(try await count() == "200")
        try await settle(store, within: patience, until: { row.count == 200 }, state: state)

        // The server ends the doorbell's connection: the next commit is still heard.
        #expect(try await PostgresServer.psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'trackedmodels doorbell'") != "0")
        #expect(try await Helper.start(["increment", url, "1", "10"]).exitStatus() == 0)
        try await settle(store, within: patience, until: { row.count == 210 }, state: state)

        // The server restarts while a process commits bump after bump.
        let restarted = try Helper.start(["increment-through", url, "1", "100"])
        try await settle { Int(try await count()) ?? 0 >= 230 }
        try await host.restartServer()
        #expect(await restarted.exitStatus() == 0)
        #expect(try await count() == "310")
        try await settle(store, within: patience, until: { row.count == 310 }, state: state)

        // The link goes down for three seconds while a process commits.
        let partitioned = try Helper.start(["increment-through", url, "1", "100"])
        try await settle { Int(try await count()) ?? 0 >= 330 }
        try await host.setLink(up: false)
        try await Task.sleep(for: .seconds(3))
        try await host.setLink(up: true)
        #expect(await partitioned.exitStatus() == 0)
        #expect(try await count() == "410")
        try await settle(store, within: patience, until: { row.count == 410 }, state: state)

        // What the watcher heard only ever went up, and ended at the final count.
        let values = heard.withLock { $0 }
        #expect(values == values.sorted() && values.last == 410, "heard \(values)")
        token.cancel()
        try await store.close()
    }
}

/// A PostgreSQL server on a host of its own: a network namespace joined to this one by a veth
/// pair, the server listening on the namespace's address (made with `.ci/postgres`). Needs root
/// and iproute2; where namespaces cannot be made, the test is cancelled, saying why.
struct ServerHost {
    let namespace: String
    /// This side's end of the veth pair.
    let link: String
    /// The server's address, on the namespace's end.
    let address: String
    let directory: String
    let url: String

    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../../.ci/postgres").standardized.path

    static func make() async throws -> ServerHost {
        let tag = ProcessInfo.processInfo.processIdentifier % 10_000
        let subnet = "10.77.\(tag % 250)"
        let namespace = "tmhost\(tag)"
        let link = "tmh\(tag)"
        do {
            try await shell("ip netns add \(namespace)")
        } catch {
            try Test.cancel("a network namespace cannot be made here (\(error)); the cross-host test needs root and iproute2 (apt-get install iproute2)")
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "trackedmodels-crosshost-\(tag)").path
        let host = ServerHost(namespace: namespace, link: link, address: "\(subnet).2", directory: directory, url: "")
        do {
            try await shell("""
                ip link add \(link) type veth peer name tmd\(tag) && ip link set tmd\(tag) netns \(namespace) && \
                ip addr add \(subnet).1/30 dev \(link) && ip link set \(link) up && \
                ip netns exec \(namespace) ip addr add \(subnet).2/30 dev tmd\(tag) && \
                ip netns exec \(namespace) ip link set tmd\(tag) up && ip netns exec \(namespace) ip link set lo up
                """)
            let url = try await shell("ip netns exec \(namespace) bash '\(script)' start '\(directory)' \(subnet).2")
            guard url.hasPrefix("postgres://") else { throw ShellFailure(message: "no URL: \(url)") }
            return ServerHost(namespace: namespace, link: link, address: host.address, directory: directory, url: url)
        } catch {
            await host.remove()
            if ProcessInfo.processInfo.environment["TRACKEDMODELS_REQUIRE_POSTGRES"] != "1" {
                try Test.cancel("no PostgreSQL server could be started on a host of its own (\(error)); install PostgreSQL (apt-get install postgresql)")
            }
            throw error
        }
    }

    func restartServer() async throws {
        try await Self.shell("ip netns exec \(namespace) bash '\(Self.script)' restart '\(directory)'")
    }

    /// Takes the link between the hosts down (a partition) or up again.
    func setLink(up: Bool) async throws {
        try await Self.shell("ip link set \(link) \(up ? "up" : "down")")
    }

    /// Takes the server's end of the link down or up again: this host's packets go out and
    /// nothing comes back, not even an error (a host that vanished).
    func setSilent(_ silent: Bool) async throws {
        try await Self.shell("ip netns exec \(namespace) ip link set \(peer) \(silent ? "down" : "up")")
    }

    /// The server's end of the veth pair.
    var peer: String { "tmd" + link.dropFirst(3) }

    func remove() async {
        _ = try? await Self.shell("ip netns exec \(namespace) bash '\(Self.script)' stop '\(directory)'")
        _ = try? await Self.shell("ip netns del \(namespace)")
        _ = try? await Self.shell("ip link del \(link) 2>/dev/null || true")
    }

    struct ShellFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Runs a shell command, on a thread of its own; what it printed (standard output and
    /// error), trimmed.
    @discardableResult
    static func shell(_ command: String) async throws -> String {
        let (status, text) = await onThreadOfItsOwn { PostgresServer.shell("\(command) 2>&1") }
        guard status == 0 else { throw ShellFailure(message: "`\(command)` failed (\(status)): \(text)") }
        return text
    }
}
