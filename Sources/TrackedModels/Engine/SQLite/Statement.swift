internal import CSQLite
import Foundation

/// A compiled SQL statement of one ``Connection``.
///
/// Bound values are never copied into errors: a failing statement reports its SQL only.
///
/// Related SQLite documentation: <https://www.sqlite.org/c3ref/stmt.html>
package final class Statement {
    let handle: OpaquePointer
    let sql: String
    private unowned let connection: Connection

    init(handle: OpaquePointer, connection: Connection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Whether the statement cannot change the database (`sqlite3_stmt_readonly`).
    var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    var columnCount: Int { Int(sqlite3_column_count(handle)) }

    func columnName(at index: Int) -> String {
        String(cString: sqlite3_column_name(handle, Int32(index)))
    }

    /// Readies the statement to run again; bindings are cleared too.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: - Binding

    /// Binds values to the parameters in order (`?1`, `?2`, ...).
    func bind(_ values: [SQLValue]) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(
                code: .range,
                message: "the statement takes \(expected) argument(s) but \(values.count) were given",
                sql: sql
            )
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    func bind(_ value: SQLValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, index)
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            // SQLite turns NaN into NULL. Refuse it instead of storing a value that reads back
            // as something else.
            guard !real.isNaN else {
                throw SQLiteError(
                    code: .mismatch,
                    message: "NaN cannot be stored (SQLite would turn it into NULL); "
                        + "store a finite value, an infinity, or use an optional column and nil",
                    sql: sql
                )
            }
            code = sqlite3_bind_double(handle, index, real)
        case .text(var text):
            // Bound by its UTF-8 length, so that a NUL inside the text is stored too (a length
            // of -1 would end the text at the first NUL). An empty text needs a non-NULL
            // pointer, or SQLite binds NULL.
            code = text.withUTF8 { bytes in
                sqlite3_bind_text64(handle, index, UnsafeRawPointer(bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                                    sqlite3_uint64(bytes.count), csqlite_transient(), UInt8(SQLITE_UTF8))
            }
        case .blob(let data):
            code = data.withUnsafeBytes { bytes in
                // A zero-length blob needs a non-NULL pointer, or SQLite binds NULL.
                sqlite3_bind_blob64(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                    sqlite3_uint64(bytes.count), csqlite_transient())
            }
        }
        guard code == SQLITE_OK else { throw connection.error(code, sql: sql) }
    }

    // MARK: - Running

    /// Advances to the next row; `false` when the statement is done.
    func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(code, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Runs the statement to completion with the given arguments, ignoring rows.
    package func run(_ arguments: [SQLValue] = []) throws {
        if !arguments.isEmpty { try bind(arguments) }
        defer { reset() }
        while try step() {}
    }

    /// Runs the statement and reads every row.
    func rows(_ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try bind(arguments)
        defer { reset() }
        var rows: [[SQLValue]] = []
        let count = columnCount
        while try step() {
            rows.append((0..<count).map(value(at:)))
        }
        return rows
    }

    // MARK: - Reading

    /// The value of a column of the current row, for showing it: text that is not valid UTF-8
    /// keeps its valid parts and shows each invalid byte as `\xNN`, instead of silently becoming
    /// U+FFFD (so that what is stored is visible).
    func displayValue(at index: Int) -> SQLValue {
        let column = Int32(index)
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT, let text = sqlite3_column_text(handle, column) else {
            return value(at: index)
        }
        let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
        if let valid = String(validating: bytes, as: UTF8.self) { return .text(valid) }
        var shown = ""
        var start = bytes.startIndex
        while start < bytes.endIndex {
            // The longest valid prefix, then one invalid byte, shown as an escape.
            var end = bytes.endIndex
            while end > start, String(validating: bytes[start..<end], as: UTF8.self) == nil { end -= 1 }
            shown += String(decoding: bytes[start..<end], as: UTF8.self)
            if end < bytes.endIndex {
                shown += String(format: "\\x%02x", bytes[end])
                end += 1
            }
            start = end
        }
        return .text(shown)
    }

    /// The value of a column of the current row, exactly as stored: `nil` for text that is not
    /// valid UTF-8 (which ``value(at:)`` would read with replacement characters).
    func validatedValue(at index: Int) -> SQLValue? {
        let column = Int32(index)
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { return value(at: index) }
        guard let text = sqlite3_column_text(handle, column) else { return .text("") }
        return String(validating: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self).map(SQLValue.text)
    }

    /// The value of a column of the current row.
    func value(at index: Int) -> SQLValue {
        let column = Int32(index)
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard let bytes = sqlite3_column_text(handle, column) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard let bytes = sqlite3_column_blob(handle, column), count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }
}
