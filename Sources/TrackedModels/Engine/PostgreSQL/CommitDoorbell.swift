import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// Rings when another connection may have committed to the change log: a connection of its own
/// that `LISTEN`s on the log's channel, whose notifications carry nothing (the log says what
/// changed; a notification only says "look").
///
/// A notification sent while the connection is down is gone, so after every (re)connection the
/// doorbell rings once, and the reader catches up from its position in the log. It tries again
/// with a growing pause (50 ms to 2 s) until ``stop()``. The connection is named
/// `trackedmodels doorbell` in `pg_stat_activity`.
///
/// Related PostgreSQL documentation: <https://www.postgresql.org/docs/current/sql-listen.html>
final class CommitDoorbell: Sendable {
    private let task: Task<Void, Never>
    /// The connection listening now, so that ``stop()`` can close it.
    private let listening = Listening()
    static let role = "trackedmodels doorbell"

    private final class Listening: Sendable {
        let connection = Mutex<PostgresConnection?>(nil)
    }

    init(endpoint: PostgresEndpoint, logger: Logger, ring: @escaping @Sendable () -> Void) {
        let listening = listening
        task = Task.detached {
            var pause = Duration.milliseconds(50)
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresSession.makeConnection(endpoint, role: Self.role, logger: logger).get()
                    listening.connection.withLock { $0 = connection }
                    defer {
                        listening.connection.withLock { $0 = nil }
                        PostgresSession.close(connection)
                    }
                    guard !Task.isCancelled else { return }
                    // A notification rings on the connection's event loop as it arrives, with no
                    // task to hand it on (each thread woken costs the most on a busy machine).
                    // The listener is added on that loop while the connection is open: added to a
                    // connection closed meanwhile (by `stop()`, or the server), it would be
                    // dropped unused, which postgres-nio traps on.
                    try await connection.eventLoop.submit {
                        guard !connection.isClosed else { throw ListeningEnded() }
                        connection.addListener(channel: PostgreSQLChangeLog.channel) { _, _ in ring() }
                    }.get()
                    // The listener sends `LISTEN` on its own, without an answer to await; this one
                    // (the same again, which changes nothing) is answered after it: no commit goes
                    // unheard from here.
                    _ = try await connection.query("LISTEN \(unescaped: quoteIdentifier(PostgreSQLChangeLog.channel))", logger: logger).collect()
                    // Whatever was committed while nobody listened.
                    ring()
                    pause = .milliseconds(50)
                    try await connection.closeFuture.get()
                } catch {
                    guard !Task.isCancelled else { return }
                    logger.debug("the change log's doorbell lost its connection; listening again", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
    }

    /// The connection closed before the doorbell listened on it.
    private struct ListeningEnded: Error {}

    /// Stops listening and closes the connection.
    func stop() {
        task.cancel()
        if let connection = listening.connection.withLock({ $0 }) { PostgresSession.close(connection) }
    }
}
