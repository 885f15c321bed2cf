import Dispatch

/// Tells, without trapping, whether code runs on the main dispatch queue, where main-actor jobs
/// run (on Linux, not always on the main thread).
///
/// A queue-specific key set on the main queue is visible exactly from blocks running there,
/// as GRDB's scheduling watchdog does for its database queues. The store uses it to check its
/// isolation with a message of its own: on Linux, `preconditionIsolated` traps without printing
/// its message.
enum MainQueue {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Void = DispatchQueue.main.setSpecific(key: key, value: true)

    static var isCurrent: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: key) == true
    }
}
