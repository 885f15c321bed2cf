import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// A PostgreSQL connection that only `LISTEN`s on the change log's channel and notes the
/// `CLOCK_MONOTONIC` time each notification arrives: how soon any client, with no store and
/// no look at the log, can hear that another process committed. The commit → event figures
/// of ``ExternalLatencyBenchmark`` stand on this floor, measured on the same commits.
///
/// The notification is sent by the log's trigger (`pg_notify('trackedmodels_changes', '')`,
/// once per committing transaction) when the transaction commits.
final class BareListener: Sendable {
    private let connection: PostgresConnection
    private let arrivals: Arrivals

    private final class Arrivals: Sendable {
        let times = Mutex<[UInt64]>([])
    }

    private init(connection: PostgresConnection, arrivals: Arrivals) {
        self.connection = connection
        self.arrivals = arrivals
    }

    /// Connects and listens; returns once `LISTEN` is answered, so that no later commit goes
    /// unheard.
    static func start(_ configuration: PostgresConnection.Configuration, logger: Logger) async throws -> BareListener {
        let connection = try await PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 2, logger: logger)
        let arrivals = Arrivals()
        do {
            // Noted on the connection's event loop as the notification arrives; added there
            // while the connection is open (added to a closed one, postgres-nio traps).
            try await connection.eventLoop.submit {
                guard !connection.isClosed else { throw BenchmarkError("the bare listener's connection closed before it listened") }
                _ = connection.addListener(channel: "trackedmodels_changes") { _, _ in
                    let now = monotonicNanoseconds()
                    arrivals.times.withLock { $0.append(now) }
                }
            }.get()
            // Answered after the `LISTEN` the listener sent: every later commit is heard.
            try await connection.query("LISTEN trackedmodels_changes", logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        return BareListener(connection: connection, arrivals: arrivals)
    }

    /// When each notification arrived so far, in order.
    var arrivalTimes: [UInt64] { arrivals.times.withLock { $0 } }

    func stop() async {
        try? await connection.close()
    }
}
