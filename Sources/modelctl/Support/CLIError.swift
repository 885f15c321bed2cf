import ArgumentParser
import Foundation
import TrackedModels

/// A failure to report on stderr with a sysexits.h exit code.
struct CLIError: Error {
    enum Status: Int32 {
        case usage = 64
        case dataError = 65
        case missingInput = 66
        case ioError = 74
        case unavailable = 69
        case temporaryFailure = 75
        case permissionDenied = 77
        case configuration = 78
    }

    let status: Status
    let message: String

    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The status and message for any error the library throws.
    init(_ error: any Error, operation: String, path: String) {
        switch error {
        case let error as CLIError:
            self = error
        case let error as StoreError:
            self.init(store: error, operation: operation, path: path)
        case let error as CopyError:
            let status: Status = switch error.code {
            case .sameDatabase: .usage
            case .versionMismatch: .configuration
            default: .dataError
            }
            self.init(status, "\(operation) \(path): \(error.message)")
        case let error as MigrationError:
            let status: Status = switch error.code {
            case .unknownVersion: .usage
            case .statementFailed: .dataError
            default: .configuration
            }
            self.init(status, "\(operation) \(path): \(error)")
        default:
            self.init(.dataError, "\(operation) \(path): \(error)")
        }
    }

    /// The status by what the store says happened; the message adds the engine's own details
    /// (its code, and the SQL that failed) and what to do.
    private init(store error: StoreError, operation: String, path: String) {
        let advice: String?
        let status: Status
        switch error.code {
        case .schemaMismatch: (status, advice) = (.configuration, nil)
        case .notReadOnly, .noStatement: (status, advice) = (.usage, nil)
        case .closed: (status, advice) = (.ioError, nil)
        case .busy:
            (status, advice) = (.temporaryFailure, "another process holds the database; try again")
        case .readOnly where path.contains("://"):
            // (The server's message already says which right is missing.)
            (status, advice) = (.permissionDenied, nil)
        case .readOnly:
            (status, advice) = (.permissionDenied, FileDiagnosis.blockedWrite(path) ?? "check the permissions of the file, its folder, and its -wal and -shm files")
        case .storageFull:
            (status, advice) = (.ioError, "the disk is full; free space on it and run the command again (nothing was committed)")
        case .ioFailure:
            (status, advice) = (.ioError, "check the disk (space, errors)")
        case .cannotOpen where path.contains("://"):
            (status, advice) = (.missingInput, nil)
        case .connectionLost:
            (status, advice) = (.unavailable, nil)
        case .accessDenied:
            (status, advice) = (.permissionDenied, nil)
        case .cannotOpen:
            if let blocked = FileDiagnosis.blockedWrite(path) {
                (status, advice) = (.permissionDenied, blocked)
            } else {
                (status, advice) = (.missingInput, "check the path, or run `modelctl seed` to create it")
            }
        case .notADatabase:
            (status, advice) = (.dataError, "the file is not a usable SQLite database; point --db at another file")
        default:
            (status, advice) = (.dataError, nil)
        }
        // One line for the problem, one for its details: every difference, or the cause.
        var message = "\(operation) \(path): \(error.message)"
        var details = error.differences.map(\.description)
        if let engine = error.underlying as? SQLiteError {
            message += " (SQLite code \(engine.code.rawValue))"
            if let sql = engine.sql { details.append("in: \(sql)") }
        } else if let underlying = error.underlying as? StoreError {
            // (A PostgreSQL error's message already holds what the server said.)
            details.append("caused by: \(underlying)")
        }
        if !details.isEmpty { message += "\n  " + details.joined(separator: "; ") }
        self.init(status, message + (advice.map { "; \($0)" } ?? ""))
    }
}

/// Runs a command body, turning any error into a stderr message and a sysexits.h exit code.
func reportingErrors(operation: String, path: String, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as ValidationError {
        throw error
    } catch {
        let failure = CLIError(error, operation: operation, path: path)
        FileHandle.standardError.write(Data("modelctl: \(failure.message)\n".utf8))
        throw ExitCode(failure.status.rawValue)
    }
}
