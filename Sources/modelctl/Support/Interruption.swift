import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into a flag a long command checks between units of work, so that
/// it can commit what it acknowledged and exit cleanly instead of dying mid-write.
final class Interruption {
    private let flag = SignalFlag()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler(handler: Self.handler(flag: flag, signalNumber: signalNumber))
            source.resume()
            sources.append(source)
        }
    }

    /// The handler is made outside any actor: it runs on a dispatch queue.
    private nonisolated static func handler(flag: SignalFlag, signalNumber: Int32) -> @Sendable () -> Void {
        { flag.set(signalNumber) }
    }

    /// Stops listening; a signal after this has its default effect.
    func stop() {
        for source in sources { source.cancel() }
        sources.removeAll()
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }

    /// Runs `action` on a background queue when a signal arrives (at once if one already has).
    func whenSignalled(_ action: @escaping @Sendable () -> Void) {
        flag.whenSet(action)
    }

    /// The signal received, if any.
    var received: Int32? { flag.value }

    /// The conventional exit status after a signal: 128 + its number.
    var exitStatus: Int32? { received.map { 128 + $0 } }
}

/// The last signal received, set from the signal sources' queue.
private final class SignalFlag: Sendable {
    private let signalNumber = Atomic<Int32>(0)
    private let actions = Mutex<[@Sendable () -> Void]>([])

    func set(_ number: Int32) {
        signalNumber.store(number, ordering: .relaxed)
        for action in actions.withLock({ $0 }) { action() }
    }

    func whenSet(_ action: @escaping @Sendable () -> Void) {
        actions.withLock { $0.append(action) }
        if value != nil { action() }
    }

    var value: Int32? {
        let number = signalNumber.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}
