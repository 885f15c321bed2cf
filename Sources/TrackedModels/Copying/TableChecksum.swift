import Crypto
import Foundation

/// A checksum of a table's rows that does not depend on their order: the sum, in four 64-bit
/// lanes, of each row's SHA-256. Two databases that list the same rows in different orders (a
/// text key sorts by collation on PostgreSQL, by bytes on SQLite) give the same checksum; a
/// value changed, a row lost or added does not. Reals count by value: `-0.0` is `0.0`.
///
/// ```swift
/// var checksum = TableChecksum()
/// checksum.add([.integer(1), .text("Row 1")])
/// print(checksum.rows, checksum.hex)
/// ```
struct TableChecksum: Equatable {
    private(set) var rows = 0
    private var sum = SIMD4<UInt64>()
    /// The row's encoding, kept between rows.
    private var bytes: [UInt8] = []

    mutating func add(_ row: [SQLValue]) {
        bytes.removeAll(keepingCapacity: true)
        for value in row { Self.encode(value, into: &bytes) }
        let digest = SHA256.hash(data: bytes)
        let lanes = digest.withUnsafeBytes { raw in
            SIMD4<UInt64>((0..<4).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) })
        }
        sum &+= lanes
        rows += 1
    }

    /// The checksum as 64 hexadecimal digits.
    var hex: String {
        (0..<4).map { lane in
            let text = String(sum[lane], radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }.joined()
    }

    /// One value, unambiguously: a kind byte, then a fixed-size number or a length and bytes.
    private static func encode(_ value: SQLValue, into bytes: inout [UInt8]) {
        func append(_ number: UInt64) {
            withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) }
        }
        switch value {
        case .null:
            bytes.append(0)
        case .integer(let integer):
            bytes.append(1)
            append(UInt64(bitPattern: integer))
        case .real(let real):
            // By value: -0.0 is 0.0, which is all SQLite keeps of it.
            bytes.append(2)
            append(real == 0 ? 0 : real.bitPattern)
        case .text(let text):
            bytes.append(3)
            append(UInt64(text.utf8.count))
            bytes.append(contentsOf: text.utf8)
        case .blob(let data):
            bytes.append(4)
            append(UInt64(data.count))
            bytes.append(contentsOf: data)
        }
    }

    static func == (left: TableChecksum, right: TableChecksum) -> Bool {
        left.rows == right.rows && left.sum == right.sum
    }
}
