public import Foundation

/// Runs `body`, a call that blocks (a pipe read to its end, a wait for another process), on a
/// thread of its own, and returns what it returned.
///
/// A test must never block a thread of Swift's cooperative pool: the pool has one thread per
/// core, so on a two-core machine two tests waiting for a `psql` hold every other test still,
/// their timers and polls included, for as long as the waits last (CI saw a 90-second stall
/// at the start of a run, in which a polled copy ran to its end before it could be signalled).
///
/// ```swift
/// let printed = await onThreadOfItsOwn { pipe.fileHandleForReading.readDataToEndOfFile() }
/// ```
public func onThreadOfItsOwn<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

extension Process {
    /// Waits for the process to exit, on a thread of its own, and returns its exit status (the
    /// signal's number when a signal ended it).
    ///
    /// ```swift
    /// try process.run()
    /// #expect(await process.exitStatus() == 0)
    /// ```
    public func exitStatus() async -> Int32 {
        await onThreadOfItsOwn {
            self.waitUntilExit()
            return self.terminationStatus
        }
    }
}
