import Dispatch
#if os(Linux)
import Glibc
#endif

/// Wakes the change-log reader as soon as another process writes the database's WAL file,
/// instead of at the next poll. Linux only (inotify); elsewhere, and if the file cannot be
/// watched, the poll alone notices commits.
///
/// A wake-up is only a hint: the reader still checks `PRAGMA data_version`, so the worker's
/// own writes, which modify the same file, cost one cheap check each.
final class FileChangeSignal {
    #if os(Linux)
    private let descriptor: Int32
    private let source: any DispatchSourceRead
    #endif

    /// Starts watching, or returns `nil` when the platform or the file does not allow it.
    ///
    /// - Parameters:
    ///   - path: The file to watch (the database's `-wal` file).
    ///   - queue: Where `handler` runs.
    init?(path: String, queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        #if os(Linux)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, path, UInt32(IN_MODIFY)) >= 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            // Drain the queued events; their content does not matter, only that they came.
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(descriptor, &buffer, buffer.count) > 0 {}
            handler()
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        #else
        return nil
        #endif
    }

    /// Stops watching and closes the descriptor.
    func cancel() {
        #if os(Linux)
        source.cancel()
        #endif
    }
}
