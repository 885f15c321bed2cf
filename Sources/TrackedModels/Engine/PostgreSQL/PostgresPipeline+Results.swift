import CLibpq
import Foundation
import NIOCore
import PostgresNIO

// What libpq hands back: a result's rows, a statement the server refused, a connection that
// failed.
extension PostgresPipeline {
    /// A result's rows, each cell read from its binary form by its type: integers, reals,
    /// booleans and text in place in libpq's buffer (``valueInPlace(_:type:)``), every other
    /// type through ``PostgresValues/value(of:)``.
    static func rows(of result: OpaquePointer) throws -> [[SQLValue]] {
        let count = PQntuples(result)
        guard count > 0 else { return [] }
        let fields = PQnfields(result)
        let types = (0..<fields).map { PostgresDataType(UInt32(PQftype(result, $0))) }
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(fields))
            for field in 0..<fields {
                guard PQgetisnull(result, row, field) == 0, let bytes = PQgetvalue(result, row, field) else {
                    values.append(.null)
                    continue
                }
                let cell = UnsafeRawBufferPointer(start: bytes, count: Int(PQgetlength(result, row, field)))
                if let value = valueInPlace(cell, type: types[Int(field)]) {
                    values.append(value)
                    continue
                }
                values.append(try PostgresValues.value(of: PostgresCell(bytes: ByteBuffer(bytes: cell), dataType: types[Int(field)], format: .binary, columnName: String(cString: PQfname(result, field)), columnIndex: Int(field))))
            }
            rows.append(values)
        }
        return rows
    }

    /// A cell of the types a store's rows and the change log are made of, read where libpq
    /// holds it (a watcher reads every changed row: a copy of each cell into a buffer of its
    /// own cost more than the rest of the read); nil for any other type, or a length the type
    /// does not have, which ``PostgresValues/value(of:)`` reads or reports.
    ///
    /// ```swift
    /// valueInPlace(UnsafeRawBufferPointer(start: bytes, count: 8), type: .int8)   // .integer(...)
    /// ```
    static func valueInPlace(_ cell: UnsafeRawBufferPointer, type: PostgresDataType) -> SQLValue? {
        switch type {
        case .int8 where cell.count == 8: .integer(Int64(bigEndian: cell.loadUnaligned(as: Int64.self)))
        case .int4 where cell.count == 4: .integer(Int64(Int32(bigEndian: cell.loadUnaligned(as: Int32.self))))
        case .int2 where cell.count == 2: .integer(Int64(Int16(bigEndian: cell.loadUnaligned(as: Int16.self))))
        case .float8 where cell.count == 8: .real(Double(bitPattern: UInt64(bigEndian: cell.loadUnaligned(as: UInt64.self))))
        case .bool where cell.count == 1 && cell[0] <= 1: .integer(Int64(cell[0]))
        case .text, .varchar: .text(String(decoding: cell, as: UTF8.self))
        default: nil
        }
    }

    /// What libpq says went wrong with the connection.
    struct ConnectionFailure: Error, CustomStringConvertible {
        let description: String

        init(_ connection: OpaquePointer) {
            description = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// What the server reported of a statement it refused.
    struct ServerError: Error, CustomStringConvertible {
        let sqlState: String
        let message: String?
        let detail: String?
        let constraint: String?
        /// The server function that raised it.
        let routine: String?
        /// Whether the error was FATAL (or PANIC): the server ends the connection.
        let endsTheConnection: Bool

        init(sqlState: String, message: String) {
            (self.sqlState, self.message, detail, constraint, routine, endsTheConnection) = (sqlState, message, nil, nil, nil, false)
        }

        init?(_ result: OpaquePointer) {
            func field(_ code: Character) -> String? {
                PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
            }
            guard let state = field("C") else { return nil }
            (sqlState, message, detail, constraint, routine) = (state, field("M"), field("D"), field("n"), field("R"))
            endsTheConnection = ["FATAL", "PANIC"].contains(field("V"))
        }

        var description: String { "\(message ?? "error") (SQLSTATE \(sqlState))" }
    }
}
