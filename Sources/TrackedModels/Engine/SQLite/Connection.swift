internal import CSQLite
import Foundation

/// How a connection opens its database.
package enum OpenMode: Sendable {
    case readOnly
    /// For reading only, leaving no `-wal` or `-shm` file behind: read-write with
    /// `PRAGMA query_only` where the file is writable (the last connection to close a WAL
    /// database removes those files; a read-only one cannot); where it is not, read-only when
    /// those files exist, else the file as it is (SQLite's `immutable`), checked afterwards by
    /// ``Connection/readIsConsistent``. Never creates the database.
    case reading
    case readWrite
    case readWriteCreate
}

/// One SQLite connection: the only type (with ``Statement``) that calls `sqlite3_*`.
///
/// A connection is not `Sendable`: it is owned by one isolation domain at a time (the store's
/// reader, or the database worker's queue). SQLite is opened in multi-thread mode
/// (`SQLITE_OPEN_NOMUTEX`), because that ownership already serializes every call:
/// "In this mode, SQLite can be safely used by multiple threads provided that no single
/// database connection nor any object derived from database connection, such as a prepared
/// statement, is used in two or more threads at the same time."
/// (<https://www.sqlite.org/threadsafe.html>)
package final class Connection {
    let handle: OpaquePointer
    /// The file name SQLite was given (absolute), or the private in-memory name.
    let filename: String
    /// Statements compiled by ``cachedStatement(_:)``, least recently used dropped past 64.
    private var statementCache = StatementCache<String>(capacity: 64)
    /// How many savepoints are open inside the current transaction.
    var savepointDepth = 0
    /// For a connection that reads the file as it is: the file as it was when it was opened.
    private var immutableFingerprint: FileFingerprint?

    /// Opens a connection.
    ///
    /// - Parameters:
    ///   - filename: An absolute path, or a name from ``Connection/inMemoryFilename()``.
    ///   - mode: Read-only, read-write, or read-write creating the file when missing.
    ///   - busyTimeout: How long a statement waits on another connection's lock before it fails
    ///     with `SQLITE_BUSY`.
    package convenience init(filename: String, mode: OpenMode, busyTimeout: Duration) throws {
        guard mode == .reading else {
            try self.init(opening: filename, mode: mode, busyTimeout: busyTimeout)
            return
        }
        if access(filename, W_OK) == 0 {
            try self.init(opening: filename, mode: .readWrite, busyTimeout: busyTimeout)
            try execute("PRAGMA query_only = 1")
        } else if !Self.isWAL(filename) || FileManager.default.fileExists(atPath: filename + "-wal") || FileManager.default.fileExists(atPath: filename + "-shm") {
            // A rollback-journal file gets no sidecar from a reader (and a hot journal is
            // refused, not read); a WAL file's sidecars are there already.
            try self.init(opening: filename, mode: .readOnly, busyTimeout: busyTimeout)
        } else {
            // Nobody has the WAL file open (the last connection to close removes both files). A
            // read-only connection would create them, owned by this user, and the file's owner
            // could not write them afterwards: read the file as it is, without locks, and let
            // the reader check afterwards that nobody wrote it meanwhile.
            let fingerprint = FileFingerprint.settled(path: filename)
            try self.init(opening: filename, mode: .readOnly, busyTimeout: busyTimeout, immutable: true)
            immutableFingerprint = fingerprint
        }
    }

    private init(opening filename: String, mode: OpenMode, busyTimeout: Duration, immutable: Bool = false) throws {
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readOnly, .reading: flags |= SQLITE_OPEN_READONLY
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        var name = filename
        if immutable {
            // Related SQLite documentation: <https://www.sqlite.org/uri.html#uriimmutable>
            name = "file://" + (filename.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? filename) + "?immutable=1"
            flags |= SQLITE_OPEN_URI
        }
        if Self.isInMemory(filename) { flags |= SQLITE_OPEN_URI }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard let handle, code == SQLITE_OK else {
            // "Whether or not an error occurs when it is opened, resources associated with the
            // database connection handle should be released by passing it to sqlite3_close()
            // when it is no longer required." (https://www.sqlite.org/c3ref/open.html)
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SQLiteError(code: ResultCode(rawValue: code), message: "\(message): \(filename)")
        }
        self.handle = handle
        self.filename = filename
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Int32(clamping: busyTimeout.wholeMilliseconds))
        #if canImport(Darwin)
        sqlite3_create_collation_v2(handle, SQLiteDialect.localizedStandardCollation, SQLITE_UTF8, nil, compareLocalizedStandard, nil)
        #endif
    }

    deinit {
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs `read` on `connection` (opened with ``OpenMode/reading``), and again on a new
    /// connection to the same file when ``readIsConsistent`` says someone wrote the file
    /// meanwhile (a page torn by that write may even fail the read); at most three times.
    ///
    /// ```swift
    /// var connection = try Connection(filename: path, mode: .reading, busyTimeout: .seconds(5))
    /// let count = try Connection.readConsistently(&connection, busyTimeout: .seconds(5)) { try $0.scalar("SELECT count(*) FROM rows") }
    /// ```
    package static func readConsistently<Result>(_ connection: inout Connection, busyTimeout: Duration, _ read: (Connection) throws -> Result) throws -> Result {
        for attempt in 1...3 {
            do {
                let result = try read(connection)
                if connection.readIsConsistent { return result }
            } catch where !connection.readIsConsistent {}
            if attempt < 3 { connection = try Connection(filename: connection.filename, mode: .reading, busyTimeout: busyTimeout) }
        }
        throw SQLiteError(code: .busy, message: "another connection kept writing the database while it was read; try again")
    }

    /// Whether a file's header says WAL mode (bytes 18 and 19 are 2).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#database_header>
    private static func isWAL(_ filename: String) -> Bool {
        guard let file = FileHandle(forReadingAtPath: filename) else { return false }
        defer { try? file.close() }
        let header = (try? file.read(upToCount: 20)) ?? Data()
        return header.count == 20 && header[18] == 2 && header[19] == 2
    }

    /// Whether what this connection read can be trusted: always for a connection that takes
    /// SQLite's locks; for one that reads the file as it is, whether nobody has written the
    /// file, nor opened it for writing, since it was opened. (Such a reader is never told of a
    /// change; read again on a new connection when this is false.)
    package var readIsConsistent: Bool {
        guard let immutableFingerprint else { return true }
        return !FileManager.default.fileExists(atPath: filename + "-wal") && FileFingerprint(path: filename) == immutableFingerprint
    }

    /// A unique name for a private in-memory database that several connections of this process
    /// can share, through SQLite's `memdb` VFS (real locking, unlike shared-cache mode).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/deserialize.html>
    static func inMemoryFilename() -> String {
        "file:/trackedmodels-\(UUID().uuidString)?vfs=memdb"
    }

    static func isInMemory(_ filename: String) -> Bool {
        filename.hasPrefix("file:/trackedmodels-") && filename.hasSuffix("?vfs=memdb")
    }

    /// Resolves a user-given path into the absolute file name handed to SQLite.
    package static func absoluteFilename(_ path: String) -> String {
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
        let cwd = FileManager.default.currentDirectoryPath
        return URL(fileURLWithPath: cwd).appendingPathComponent(path).standardizedFileURL.path
    }

    // MARK: - Errors

    /// The error for a failed call, with SQLite's current message for this connection.
    func error(_ code: Int32, sql: String? = nil) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        let resultCode = ResultCode(rawValue: extended & 0xFF == code & 0xFF ? extended : code)
        return SQLiteError(code: resultCode, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    // MARK: - Statements

    /// Compiles one statement. Trailing text after the first statement is an error, so that a
    /// second statement is never silently ignored.
    package func makeStatement(_ sql: String) throws -> Statement {
        var statementHandle: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let code = sql.withCString { sqlite3_prepare_v3(handle, $0, -1, 0, &statementHandle, &tail) }
        guard code == SQLITE_OK else { throw error(code, sql: sql) }
        guard let statementHandle else {
            throw SQLiteError(code: .misuse, message: "the SQL holds no statement (only blanks or comments); pass one SQL statement", sql: sql)
        }
        let statement = Statement(handle: statementHandle, connection: self, sql: sql)
        if let tail, tail.pointee != 0, !String(cString: tail).allSatisfy(\.isWhitespaceOrSemicolon) {
            throw SQLiteError(
                code: .misuse,
                message: "the SQL holds more than one statement; run them one at a time",
                sql: sql
            )
        }
        return statement
    }

    /// A compiled statement kept for reuse: the same SQL is compiled once per connection while
    /// it stays among the 64 most recently used.
    func cachedStatement(_ sql: String) throws -> Statement {
        try statementCache.statement(for: sql) { try makeStatement(sql) }
    }

    /// How many compiled statements the connection keeps, for tests.
    var cachedStatementCount: Int { statementCache.count }

    /// Runs SQL that may hold several statements, none of which returns rows worth reading.
    package func execute(_ sql: String) throws {
        try forEachStatement(in: sql) { statement in
            try statement.run()
        }
    }

    /// Compiles and hands over each statement of a multi-statement string in order.
    func forEachStatement(in sql: String, _ body: (Statement) throws -> Void) throws {
        try sql.withCString { start in
            var cursor = start
            while cursor.pointee != 0 {
                var statementHandle: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v3(handle, cursor, -1, 0, &statementHandle, &tail)
                let length = cursor.distance(to: tail ?? cursor)
                let text = String(decoding: UnsafeRawBufferPointer(start: cursor, count: length), as: UTF8.self)
                guard code == SQLITE_OK else { throw error(code, sql: text.trimmingCharacters(in: .whitespacesAndNewlines)) }
                if let statementHandle {
                    let statement = Statement(
                        handle: statementHandle,
                        connection: self,
                        sql: text.trimmingCharacters(in: .whitespacesAndNewlines)
                    )
                    try body(statement)
                }
                guard let tail, tail != cursor else { break }
                cursor = tail
            }
        }
    }

    // MARK: - State

    /// The rowid of the most recent successful INSERT on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// The rows the last INSERT, UPDATE or DELETE changed itself (not through triggers).
    var changes: Int64 { sqlite3_changes64(handle) }

    /// Whether a transaction is open (the connection is out of autocommit mode).
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Reads a single value: the first column of the first row, or `.null` without rows.
    func scalar(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLValue {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? statement.value(at: 0) : .null
    }
}

#if canImport(Darwin)
/// The collation behind ``TextOrder/localizedStandard``: the evaluator's very comparison.
private func compareLocalizedStandard(_: UnsafeMutableRawPointer?, _ lengthA: Int32, _ a: UnsafeRawPointer?, _ lengthB: Int32, _ b: UnsafeRawPointer?) -> Int32 {
    let x = String(decoding: UnsafeRawBufferPointer(start: a, count: Int(lengthA)), as: UTF8.self)
    let y = String(decoding: UnsafeRawBufferPointer(start: b, count: Int(lengthB)), as: UTF8.self)
    switch TextOrder.compareLocalizedStandard(x, y) {
    case .orderedAscending: return -1
    case .orderedDescending: return 1
    case .orderedSame: return 0
    }
}
#endif

extension Character {
    fileprivate var isWhitespaceOrSemicolon: Bool { isWhitespace || self == ";" }
}

/// A file's identity, size and last change, to tell whether it was written between two looks.
private struct FileFingerprint: Equatable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = 0
    var modified: timespec = timespec()
    var changed: timespec = timespec()

    init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        modified = info.st_mtimespec
        changed = info.st_ctimespec
        #else
        modified = info.st_mtim
        changed = info.st_ctim
        #endif
    }

    /// The fingerprint once the file's last change is older than a timestamp tick. File times
    /// come from a coarse clock (milliseconds on Linux): a write in the same tick as the
    /// previous one would leave them as they were ("racy git"). Gives up waiting after 0.2 s.
    static func settled(path: String) -> FileFingerprint {
        var fingerprint = FileFingerprint(path: path)
        for _ in 0..<10 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let age = Double(now.tv_sec - fingerprint.modified.tv_sec) + Double(now.tv_nsec - fingerprint.modified.tv_nsec) / 1e9
            guard age < 0.02 else { break }
            usleep(20_000)
            fingerprint = FileFingerprint(path: path)
        }
        return fingerprint
    }

    static func == (left: FileFingerprint, right: FileFingerprint) -> Bool {
        left.device == right.device && left.inode == right.inode && left.size == right.size
            && left.modified.tv_sec == right.modified.tv_sec && left.modified.tv_nsec == right.modified.tv_nsec
            && left.changed.tv_sec == right.changed.tv_sec && left.changed.tv_nsec == right.changed.tv_nsec
    }
}
