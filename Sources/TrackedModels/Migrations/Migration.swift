/// One schema migration: a version, a name, and the SQL that takes the database there.
///
/// ```swift
/// let migration = Migration(version: 1, name: "create_rows", sql: "CREATE TABLE rows (...) STRICT;")
/// ```
public struct Migration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// The file name it is kept under: `0001_create_rows.sql`.
    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name + ".sql"
    }

    /// A 64-bit FNV-1a hash of the SQL's UTF-8 bytes, in hex: detects an edited migration. It is
    /// not a cryptographic hash.
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// A migration recorded as applied in the database.
public struct AppliedMigration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let checksum: String
    /// When it was applied, as SQLite's `datetime('now')` wrote it (UTC).
    public let appliedAt: String
}
