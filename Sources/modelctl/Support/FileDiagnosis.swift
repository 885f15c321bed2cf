import Foundation

/// Finds which file or folder keeps SQLite from writing a database, so that an error names it
/// instead of saying "check the file's permissions" about a file that is writable.
enum FileDiagnosis {
    /// What blocks writing `path`, in a sentence with what to do; nil when nothing visible does.
    static func blockedWrite(_ path: String) -> String? {
        let file = URL(fileURLWithPath: path).standardizedFileURL
        let folder = file.deletingLastPathComponent().path
        if FileManager.default.fileExists(atPath: file.path), access(file.path, W_OK) != 0 {
            return "the file \(file.path) is not writable for this user; fix its permissions or run as its owner"
        }
        for suffix in ["-wal", "-shm"] {
            let sidecar = file.path + suffix
            if FileManager.default.fileExists(atPath: sidecar), access(sidecar, W_OK) != 0 {
                return "\(sidecar) is not writable for this user (another user's process probably created it); remove it or fix its permissions"
            }
        }
        if access(folder, W_OK) != 0 {
            return "the folder \(folder) is not writable for this user, and SQLite needs to create \(file.lastPathComponent)-wal and \(file.lastPathComponent)-shm there; make the folder writable or move the database"
        }
        return nil
    }
}
