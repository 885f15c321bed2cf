/// Delivers messages from the writer's and other threads to a store, on the store's actor, in
/// the order they were sent.
///
/// One task, isolated to the store's actor, drains an `AsyncStream`. The store is reached
/// through a weak reference, so a mailbox never keeps its store alive; finishing the stream
/// ends the task.
final class StoreMailbox<Message: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `target` is written once, at init, and read only in `drain`, which
    // runs isolated to `actor`, the isolation domain the target belongs to (checked there).
    private weak var target: (any MailboxTarget<Message>)?
    private let continuation: AsyncStream<Message>.Continuation

    init(target: any MailboxTarget<Message>, actor: any Actor) {
        self.target = target
        let (stream, continuation) = AsyncStream<Message>.makeStream()
        self.continuation = continuation
        Task { [self] in await drain(stream, on: actor) }
    }

    /// Sends a message from any thread.
    func send(_ message: Message) {
        continuation.yield(message)
    }

    /// Stops delivery; messages not yet delivered are dropped.
    func finish() {
        continuation.finish()
    }

    private func drain(_ stream: AsyncStream<Message>, on actor: isolated any Actor) async {
        for await message in stream {
            actor.preconditionIsolated("a store's messages must be handled on its actor")
            target?.receive(message)
        }
    }
}

/// What a ``StoreMailbox`` delivers to.
protocol MailboxTarget<Message>: AnyObject {
    associatedtype Message: Sendable
    func receive(_ message: Message)
}
