import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into a flag a long command checks between units of work, so that
/// it can commit what it acknowledged and exit cleanly instead of dying mid-write.
final class Interruption {
    private let flag = SignalFlag()
    private var sources: [any DispatchSourceSignal] = []

    /// - Parameter onSignal: Called on a background queue when a signal arrives.
    init(onSignal: @escaping @Sendable () -> Void = {}) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler(handler: Self.handler(flag: flag, signalNumber: signalNumber, onSignal: onSignal))
            source.resume()
            sources.append(source)
        }
    }

    /// The handler is made outside any actor: it runs on a dispatch queue.
    private nonisolated static func handler(flag: SignalFlag, signalNumber: Int32, onSignal: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        {
            flag.set(signalNumber)
            onSignal()
        }
    }

    /// Stops listening; a signal after this has its default effect.
    func stop() {
        for source in sources { source.cancel() }
        sources.removeAll()
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }

    /// The signal received, if any.
    var received: Int32? { flag.value }

    /// The conventional exit status after a signal: 128 + its number.
    var exitStatus: Int32? { received.map { 128 + $0 } }
}

/// The last signal received, set from the signal sources' queue.
private final class SignalFlag: Sendable {
    private let signalNumber = Atomic<Int32>(0)

    func set(_ number: Int32) { signalNumber.store(number, ordering: .relaxed) }
    var value: Int32? {
        let number = signalNumber.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}
