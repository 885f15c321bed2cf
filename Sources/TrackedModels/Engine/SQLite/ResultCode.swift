internal import CSQLite

/// A SQLite result code, primary or extended.
///
/// Match an ``SQLiteError`` by pattern; a primary code matches every extended code of its
/// family:
///
/// ```swift
/// if let sqlite = storeError.underlying as? SQLiteError, ResultCode.constraint ~= sqlite.code {
///     // SQLITE_CONSTRAINT_CHECK, SQLITE_CONSTRAINT_UNIQUE, ... all land here
/// }
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/rescode.html>
public struct ResultCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary code: the low 8 bits of an extended code.
    public var primary: ResultCode {
        ResultCode(rawValue: rawValue & 0xFF)
    }

    /// Whether the code is a primary code (it has no extended bits).
    public var isPrimary: Bool {
        rawValue == primary.rawValue
    }

    /// SQLite's English description of the code.
    public var explanation: String {
        String(cString: sqlite3_errstr(rawValue))
    }

    public static let ok = ResultCode(rawValue: SQLITE_OK)
    public static let error = ResultCode(rawValue: SQLITE_ERROR)
    public static let permission = ResultCode(rawValue: SQLITE_PERM)
    public static let abort = ResultCode(rawValue: SQLITE_ABORT)
    public static let busy = ResultCode(rawValue: SQLITE_BUSY)
    public static let locked = ResultCode(rawValue: SQLITE_LOCKED)
    public static let noMemory = ResultCode(rawValue: SQLITE_NOMEM)
    public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
    public static let interrupt = ResultCode(rawValue: SQLITE_INTERRUPT)
    public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
    public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
    public static let full = ResultCode(rawValue: SQLITE_FULL)
    public static let cannotOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
    public static let schema = ResultCode(rawValue: SQLITE_SCHEMA)
    public static let tooBig = ResultCode(rawValue: SQLITE_TOOBIG)
    public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let mismatch = ResultCode(rawValue: SQLITE_MISMATCH)
    public static let misuse = ResultCode(rawValue: SQLITE_MISUSE)
    public static let auth = ResultCode(rawValue: SQLITE_AUTH)
    public static let range = ResultCode(rawValue: SQLITE_RANGE)
    public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)
    public static let row = ResultCode(rawValue: SQLITE_ROW)
    public static let done = ResultCode(rawValue: SQLITE_DONE)
    /// Raised by this library for a change to a row that is no longer in the database (another
    /// connection deleted it, or changed its key).
    public static let notFound = ResultCode(rawValue: SQLITE_NOTFOUND)

    public static let constraintCheck = ResultCode(rawValue: SQLITE_CONSTRAINT | (1 << 8))
    public static let constraintPrimaryKey = ResultCode(rawValue: SQLITE_CONSTRAINT | (6 << 8))
    public static let constraintUnique = ResultCode(rawValue: SQLITE_CONSTRAINT | (8 << 8))
    public static let constraintNotNull = ResultCode(rawValue: SQLITE_CONSTRAINT | (5 << 8))
    public static let constraintForeignKey = ResultCode(rawValue: SQLITE_CONSTRAINT | (3 << 8))

    /// Matches a code against a pattern: a primary pattern matches its whole family.
    public static func ~= (pattern: ResultCode, code: ResultCode) -> Bool {
        pattern.isPrimary ? pattern == code.primary : pattern == code
    }

    /// Matches a thrown error against a code: `catch ResultCode.busy { ... }`.
    public static func ~= (pattern: ResultCode, error: any Error) -> Bool {
        guard let error = error as? SQLiteError else { return false }
        return pattern ~= error.code
    }
}

extension ResultCode: CustomStringConvertible {
    public var description: String {
        "\(rawValue) (\(explanation))"
    }
}
