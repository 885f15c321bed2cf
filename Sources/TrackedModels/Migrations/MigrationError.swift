/// Why migrations could not be read, checked or applied; it names the file and, for a failing
/// statement, the statement and the engine's message.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// The kind of a ``MigrationError``.
    public enum Code: Sendable, Hashable {
        /// A file in the folder is not named `NNNN_name.sql`.
        case malformedName
        /// Two files share a version.
        case duplicateVersion
        /// Versions do not run 1, 2, 3, ... without a hole.
        case gap
        /// An applied migration's file changed since it was applied.
        case checksumMismatch
        /// An applied migration has no file.
        case missingFile
        /// A statement failed; the database stays at the previous version.
        case statementFailed
        /// The requested target version does not exist.
        case unknownVersion
        /// The migrations folder cannot be read.
        case unreadableDirectory
        /// A migration file cannot be read as UTF-8 text, or lies outside the folder.
        case unreadableFile
        /// A statement would break the migration's own transaction (`COMMIT`, `ROLLBACK`,
        /// `ATTACH`, a `PRAGMA` that does nothing inside a transaction, ...).
        case refusedStatement
        /// The migrations are written for another engine than the database's.
        case wrongDialect
        /// The database's record of what was applied cannot be told for sure (PostgreSQL:
        /// several schemas hold one).
        case unclearRecord
    }

    public var code: Code
    public var message: String
    /// The file concerned, when there is one.
    public var file: String?
    /// What the database reported for a failing statement, with the engine's own error
    /// attached.
    public var underlying: StoreError?

    public var description: String {
        var text = message
        if let underlying { text += " (\(underlying.code): \(underlying.message))" }
        return text
    }

}
