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
        case let error as SQLiteError:
            self.init(sqlite: error, operation: operation, path: path)
        case let error as StoreError:
            let status: Status = switch error.code {
            case .schemaMismatch: .configuration
            case .notReadOnly, .noStatement: .usage
            case .closed: .ioError
            default: .dataError
            }
            // One line for the problem, one for its details: every difference, or the cause.
            var details = error.differences.map(\.description)
            if let underlying = error.underlying { details.append("caused by: \(underlying)") }
            let message = "\(operation) \(path): \(error.message)"
            self.init(status, details.isEmpty ? message : message + "\n  " + details.joined(separator: "; "))
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

    private init(sqlite error: SQLiteError, operation: String, path: String) {
        let advice: String
        let status: Status
        switch error.code.primary {
        case .busy, .locked:
            (status, advice) = (.temporaryFailure, "another process holds the database; try again")
        case .readOnly, .permission, .auth:
            (status, advice) = (.permissionDenied, FileDiagnosis.blockedWrite(path) ?? "check the permissions of the file, its folder, and its -wal and -shm files")
        case .ioError where error.code.rawValue == 4874, .full:
            // SQLITE_IOERR_SHMSIZE: the shared-memory file could not grow.
            (status, advice) = (.ioError, "the disk is full; free space on it and run the command again (nothing was committed)")
        case .ioError:
            (status, advice) = (.ioError, "check the disk (space, errors)")
        case .cannotOpen:
            if let blocked = FileDiagnosis.blockedWrite(path) {
                (status, advice) = (.permissionDenied, blocked)
            } else {
                (status, advice) = (.missingInput, "check the path, or run `modelctl seed` to create it")
            }
        case .corrupt, .notADatabase:
            (status, advice) = (.dataError, "the file is not a usable SQLite database; point --db at another file")
        default:
            (status, advice) = (.dataError, "see SQLite's message above")
        }
        var message = "\(operation) \(path): \(error.message) (SQLite code \(error.code.rawValue))"
        if let sql = error.sql { message += "\n  in: \(sql)" }
        self.init(status, message + "; " + advice)
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
