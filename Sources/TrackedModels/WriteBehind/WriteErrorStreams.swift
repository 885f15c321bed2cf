import Logging

/// The streams of ``ModelStore/writeErrors``: failed commits as they happen, and changes the
/// store refused where the program could not be told by a throw.
///
/// ```swift
/// let stream = errors.makeStream()
/// errors.report(StoreError(code: .notAttached, message: "Entry.list cannot point at ..."))
/// ```
final class WriteErrorStreams {
    private var continuations: [AsyncStream<StoreError>.Continuation] = []
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// A new stream of the errors published from now on.
    func makeStream() -> AsyncStream<StoreError> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreError.self)
        continuations.append(continuation)
        return stream
    }

    /// Ends every stream (the store closed or went away).
    func finish() {
        for continuation in continuations { continuation.finish() }
        continuations.removeAll()
    }

    /// Publishes an error of a change the store refused where the program could not be told by
    /// a throw (a property's setter), and logs it.
    func report(_ error: StoreError) {
        logger.warning("a change was refused", metadata: ["error": "\(error.message)", "code": "\(error.code)"])
        publish(error)
    }

    /// Publishes, and logs, that a read the store made of its own accord failed (one that keeps
    /// live results or objects current, awaited from a server): `consequence` says what it left
    /// out of date and what to do; the read's error follows it.
    ///
    /// ```swift
    /// errors.reportFailedRead(error, "row 3 of notes could not be read again; fetch it again")
    /// ```
    func reportFailedRead(_ error: any Error, _ consequence: String) {
        var failure = error as? StoreError ?? StoreError(code: .engineFailure, message: "\(error)")
        failure.message = "\(consequence) (\(failure.message))"
        logger.warning("a read failed", metadata: ["error": "\(failure.message)", "code": "\(failure.code)"])
        publish(failure)
    }

    /// Publishes an error to every stream still listened to.
    func publish(_ error: StoreError) {
        continuations.removeAll { continuation in
            if case .terminated = continuation.yield(error) { true } else { false }
        }
    }
}
