public import Foundation

/// Runs `body`, a call that blocks (a pipe read to its end, a wait for another process), on a
/// thread of its own, and returns what it returned.
///
/// A test must never block a thread of Swift's global executor: on Linux it runs on
/// libdispatch's global threads, as many as there are cores, and a blocked thread leaves the
/// pool short until libdispatch adds one, about once a second. Dozens of tests waiting for
/// `psql` at once on a two-core machine starve every other test, their timers and polls
/// included (CI saw every test stand still for about 90 s at the start of a run, in which a
/// polled copy ran to its end before it could be signalled).
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
