import Foundation

/// Reads migrations from a folder of `NNNN_name.sql` files.
///
/// ```swift
/// let migrations = try MigrationDirectory.migrations(in: "Schemas")
/// ```
public enum MigrationDirectory {
    /// The migrations in a folder, in version order.
    ///
    /// - Throws: ``MigrationError`` for a file that is not named `NNNN_name.sql` (other files
    ///   than `.sql` ones are ignored), a duplicate version, or a gap in the versions.
    public static func migrations(in path: String) throws -> [Migration] {
        let folder = URL(fileURLWithPath: path)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }
        } catch {
            throw MigrationError(code: .unreadableDirectory, message: "cannot read the migrations folder \(folder.path): \(error.localizedDescription); pass an existing folder with --schemas", file: folder.path)
        }
        let migrations = try names.map { name in
            guard let (version, title) = parse(name) else {
                throw MigrationError(
                    code: .malformedName,
                    message: "migration file \(name) is not named NNNN_name.sql (four digits, an underscore, lowercase letters, digits and underscores); rename it",
                    file: folder.appendingPathComponent(name).path
                )
            }
            let sql = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            return Migration(version: version, name: title, sql: sql)
        }
        return try validated(migrations)
    }

    /// Sorts migrations by version and checks that versions are unique and run 1, 2, 3, ...
    public static func validated(_ migrations: [Migration]) throws -> [Migration] {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (index, migration) in sorted.enumerated() {
            if index > 0, sorted[index - 1].version == migration.version {
                throw MigrationError(
                    code: .duplicateVersion,
                    message: "migrations \(sorted[index - 1].fileName) and \(migration.fileName) share version \(migration.version); give the newer one the next free number",
                    file: migration.fileName
                )
            }
            if migration.version != index + 1 {
                throw MigrationError(
                    code: .gap,
                    message: "migration \(migration.fileName) has version \(migration.version) but \(index + 1) was expected; versions start at 1 and have no gaps",
                    file: migration.fileName
                )
            }
        }
        return sorted
    }

    private static func parse(_ fileName: String) -> (Int, String)? {
        let stem = fileName.dropLast(".sql".count)
        let parts = stem.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, parts[0].allSatisfy(\.isASCIIDigit), let version = Int(parts[0]),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCIILowercaseLetter || $0.isASCIIDigit || $0 == "_" })
        else { return nil }
        return (version, String(parts[1]))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
    fileprivate var isASCIILowercaseLetter: Bool { isASCII && isLowercase }
}
