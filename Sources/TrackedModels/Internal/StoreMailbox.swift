/// Delivers messages from the worker's and other threads to a store, on the store's actor, in
/// the order they were sent.
///
/// It exists before its target, so that the parts the store wires together can be given it;
/// messages sent before ``start(delivering:)`` wait. One task, isolated to the store's actor,
/// then drains an `AsyncStream`. The target is held weakly, so a mailbox never keeps its store
/// alive; finishing the stream ends the task.
final class StoreMailbox<Message: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `target` is written once, in `start`, before the task that reads it
    // is created (task creation orders the write before the task's reads), and read only in
    // `drain`, which runs isolated to `actor` (checked there). `stream` is read only in `start`.
    private weak var target: (any MailboxTarget<Message>)?
    private let stream: AsyncStream<Message>
    private let continuation: AsyncStream<Message>.Continuation
    private let actor: any Actor

    init(actor: any Actor) {
        self.actor = actor
        (stream, continuation) = AsyncStream<Message>.makeStream()
    }

    /// Starts delivering to `target`, on the actor. Call once.
    func start(delivering target: any MailboxTarget<Message>) {
        self.target = target
        Task { [self, stream, actor] in await drain(stream, on: actor) }
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
