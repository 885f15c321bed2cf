/// SQLite's errors in the store's terms: the one place that decides what an SQLite result
/// code means for the store, and whether trying again may pass.
extension SQLiteError {
    /// This error as a ``StoreError``, with itself attached as the underlying error.
    var storeError: StoreError {
        var error = StoreError(code: .engineFailure, message: message, underlying: self)
        switch code.primary {
        case .busy, .locked:
            error.code = .busy
            error.mayPass = true
        case .full:
            error.code = .storageFull
        case .ioError where code == Self.sharedMemoryCouldNotGrow:
            error.code = .storageFull
        case .ioError:
            error.code = .ioFailure
        case .constraint:
            error.code = .constraintRefused
            error.constraint = switch code {
            case .constraintUnique: .unique
            case .constraintPrimaryKey: .primaryKey
            case .constraintNotNull: .notNull
            case .constraintCheck: .check
            case .constraintForeignKey: .foreignKey
            default: .other
            }
        case .mismatch, .tooBig:
            error.code = .valueNotStorable
        case .notFound:
            error.code = .rowNotFound
        case .cannotOpen:
            error.code = .cannotOpen
        case .readOnly, .permission, .auth:
            error.code = .readOnly
        case .corrupt, .notADatabase:
            error.code = .notADatabase
        default:
            break
        }
        return error
    }

    /// `SQLITE_IOERR_SHMSIZE`: the `-shm` file could not grow, which means a full disk.
    private static let sharedMemoryCouldNotGrow = ResultCode(rawValue: 4874)
}

/// Runs SQLite work, reporting its errors as ``StoreError``s.
func translatingSQLiteErrors<Result>(_ body: () throws -> Result) throws -> Result {
    do {
        return try body()
    } catch let error as SQLiteError {
        throw error.storeError
    }
}
