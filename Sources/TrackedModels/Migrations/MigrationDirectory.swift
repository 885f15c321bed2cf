import Foundation

/// Reads migrations from a folder of `NNNN_name.sql` files.
///
/// ```swift
/// let migrations = try MigrationDirectory.migrations(in: "Schemas")
/// ```
public enum MigrationDirectory {
    /// The migrations in a folder, in version order.
    ///
    /// - Parameters:
    ///   - path: The folder.
    ///   - dialect: The engine the SQL is written for, which decides how it splits into
    ///     statements and which statements a migration may not run.
    /// - Throws: ``MigrationError`` for a file that is not named `NNNN_name.sql` (other files
    ///   than `.sql` ones, and folders, are ignored), a duplicate version, or a gap in the versions.
    public static func migrations(in path: String, dialect: MigrationDialect = .sqlite) throws -> [Migration] {
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
            let file = folder.appendingPathComponent(name)
            let resolved = file.resolvingSymlinksInPath()
            guard resolved.deletingLastPathComponent().path == folder.resolvingSymlinksInPath().path else {
                throw MigrationError(
                    code: .unreadableFile,
                    message: "migration file \(name) is a link to \(resolved.path), outside the migrations folder; copy the file into \(folder.path) instead",
                    file: file.path
                )
            }
            guard let data = FileManager.default.contents(atPath: file.path) else {
                throw MigrationError(code: .unreadableFile, message: "cannot read migration file \(file.path); check that it is a readable file", file: file.path)
            }
            guard let sql = String(validating: data, as: UTF8.self) else {
                throw MigrationError(code: .unreadableFile, message: "migration file \(name) is not valid UTF-8 text; save it as UTF-8", file: file.path)
            }
            return Migration(version: version, name: title, sql: sql)
        }
        return try validated(migrations, dialect: dialect)
    }

    /// Sorts migrations by version and checks that versions are unique and run 1, 2, 3, ...,
    /// and that no statement would break a migration's own transaction.
    public static func validated(_ migrations: [Migration], dialect: MigrationDialect = .sqlite) throws -> [Migration] {
        for migration in migrations { try checkStatements(of: migration, dialect: dialect) }
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

    /// Statements that end, undo or escape the transaction a migration runs in, or that do
    /// nothing inside one: refused before anything runs, so that a migration stays atomic.
    private static let refused: [String: String] = [
        "BEGIN": "each migration already runs in a transaction of its own",
        "START": "each migration already runs in a transaction of its own",
        "COMMIT": "it would commit part of the migration and end its transaction",
        "END": "it would commit part of the migration and end its transaction",
        "ROLLBACK": "it would end the migration's transaction",
        "ABORT": "it would end the migration's transaction",
        "SAVEPOINT": "it would nest a transaction the migrator does not track",
        "RELEASE": "it would release a savepoint the migrator does not track",
        "VACUUM": "VACUUM cannot run inside a transaction",
    ]

    /// Statements refused on SQLite only.
    private static let sqliteRefused: [String: String] = [
        "ATTACH": "it would write another file, outside the migration's transaction",
        "DETACH": "it would detach a database outside the migration's transaction",
        "PRAGMA": "most pragmas do nothing inside a transaction (foreign_keys, journal_mode) or change the connection, not the schema",
    ]

    /// Why PostgreSQL cannot run a statement inside a transaction, by its first words.
    private static func postgresRefusal(of words: [String]) -> String? {
        if ["CREATE", "DROP", "REINDEX"].contains(words.first), words.contains("CONCURRENTLY") {
            return "building or dropping an index CONCURRENTLY cannot run inside a transaction"
        }
        return switch (words.first, words.dropFirst().first) {
        case ("CREATE", "DATABASE"), ("DROP", "DATABASE"): "CREATE or DROP DATABASE cannot run inside a transaction"
        case ("CREATE", "TABLESPACE"), ("DROP", "TABLESPACE"): "CREATE or DROP TABLESPACE cannot run inside a transaction"
        case ("REINDEX", "DATABASE"), ("REINDEX", "SCHEMA"), ("REINDEX", "SYSTEM"): "REINDEX of a whole database or schema cannot run inside a transaction"
        case ("ALTER", "SYSTEM"): "ALTER SYSTEM cannot run inside a transaction"
        case ("DISCARD", "ALL"): "DISCARD ALL cannot run inside a transaction"
        case ("PREPARE", "TRANSACTION"): "PREPARE TRANSACTION would end the migration's transaction"
        default: nil
        }
    }

    /// Pragmas that change the database inside a transaction, as a migration expects.
    private static let allowedPragmas: Set<String> = ["APPLICATION_ID", "USER_VERSION"]

    private static func checkStatements(of migration: Migration, dialect: MigrationDialect) throws {
        let statements = switch dialect {
        case .sqlite: SQLText.statements(in: migration.sql)
        case .postgres: PostgreSQLText.statements(in: migration.sql)
        }
        for statement in statements {
            let words = SQLText.leadingWords(of: statement, count: 4, nestedComments: dialect == .postgres)
            guard let keyword = words.first else { continue }
            let reason = refused[keyword] ?? (dialect == .sqlite ? sqliteRefused[keyword] : postgresRefusal(of: words))
            guard let reason else { continue }
            if keyword == "PRAGMA", words.count >= 2, allowedPragmas.contains(words[1]) { continue }
            throw MigrationError(
                code: .refusedStatement,
                message: "migration \(migration.fileName) contains `\(statement)`, which a migration may not run: \(reason); remove it (nothing was applied)",
                file: migration.fileName
            )
        }
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
