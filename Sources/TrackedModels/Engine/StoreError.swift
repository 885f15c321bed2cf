/// An error raised by ``ModelStore``: what went wrong, and what to do about it.
///
/// Match on ``code``; the ``description`` is for people and may change:
///
/// ```swift
/// do {
///     store = try ModelStore(.file("app.sqlite"), models: [Row.self])
/// } catch let error as StoreError where error.code == .schemaMismatch {
///     for difference in error.differences { print(difference) }
/// }
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of a ``StoreError``. New kinds may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        public var description: String { name }

        /// A model does not match its table; ``StoreError/differences`` lists every difference.
        public static let schemaMismatch = Code(name: "schemaMismatch")
        /// A model type was used that the store was not opened with.
        public static let modelNotRegistered = Code(name: "modelNotRegistered")
        /// A stored value does not fit the model's property.
        public static let decodingFailed = Code(name: "decodingFailed")
        /// The object does not belong to this store (never inserted, deleted, or another store's).
        public static let notAttached = Code(name: "notAttached")
        /// The store was closed.
        public static let closed = Code(name: "closed")
        /// An object with the same primary key is already in the store.
        public static let duplicateKey = Code(name: "duplicateKey")
        /// The database refused a change (a constraint, a value it cannot store); it stays
        /// pending with this error until a valid value replaces it or it is discarded.
        public static let changeRejected = Code(name: "changeRejected")
        /// The change to discard is not pending (any more).
        public static let notPending = Code(name: "notPending")
        /// A fetch descriptor uses an expression, a sort or a window that has no exact SQL
        /// translation; nothing was fetched.
        public static let unsupportedPredicate = Code(name: "unsupportedPredicate")
        /// An increment would overflow the property's integer type; nothing changed.
        public static let overflow = Code(name: "overflow")
        /// SQL that would change the database was given where only reads are allowed.
        public static let notReadOnly = Code(name: "notReadOnly")
        /// SQL was expected and none was given (empty, or only comments).
        public static let noStatement = Code(name: "noStatement")
        /// A synchronous read (or open) was asked of a database across a network (PostgreSQL),
        /// which the store's actor never waits for; use the `async` form.
        public static let asyncReadRequired = Code(name: "asyncReadRequired")
        /// A delete was refused by a ``DeleteRule/deny`` relationship that still has children;
        /// nothing changed.
        public static let deleteDenied = Code(name: "deleteDenied")

        // What the database reported, in the store's terms; ``StoreError/underlying`` holds
        // the engine's own error.

        /// Another connection holds the database's lock; the store tries again on its own.
        public static let busy = Code(name: "busy")
        /// The disk or the database is full; changes stay pending until there is room.
        public static let storageFull = Code(name: "storageFull")
        /// Reading or writing the database failed; changes stay pending.
        public static let ioFailure = Code(name: "ioFailure")
        /// A constraint refused a change; ``StoreError/constraint`` says which kind.
        public static let constraintRefused = Code(name: "constraintRefused")
        /// A value the database cannot store: a NaN, text or bytes past its size limit, a
        /// counter sum past 64 bits, a value of the wrong type for the column.
        public static let valueNotStorable = Code(name: "valueNotStorable")
        /// The row a change was for is no longer in the database (another connection deleted
        /// it or changed its key).
        public static let rowNotFound = Code(name: "rowNotFound")
        /// The connection to the database was lost.
        public static let connectionLost = Code(name: "connectionLost")
        /// The database cannot be opened: it does not exist, or its folder cannot be reached.
        public static let cannotOpen = Code(name: "cannotOpen")
        /// The server refused this user: a wrong user or password, or an authentication
        /// method the store cannot use.
        public static let accessDenied = Code(name: "accessDenied")
        /// The database cannot be written by this user (a read-only file, folder or
        /// connection).
        public static let readOnly = Code(name: "readOnly")
        /// The file is not a database of this engine, or it is damaged.
        public static let notADatabase = Code(name: "notADatabase")
        /// Any other failure of the database; see ``StoreError/underlying``.
        public static let engineFailure = Code(name: "engineFailure")
    }

    /// The kind of constraint behind ``Code/constraintRefused``.
    public enum Constraint: String, Sendable, Hashable {
        case unique, primaryKey, notNull, check, foreignKey, other
    }

    public var code: Code
    /// What went wrong and what to do, in a sentence or two.
    public var message: String
    /// Every difference, for ``Code/schemaMismatch``.
    public var differences: [SchemaDifference] = []
    /// The kind of constraint, for ``Code/constraintRefused``.
    public var constraint: Constraint?
    /// Whether the same work, tried again unchanged, may succeed without anyone fixing
    /// anything (the database was busy). The engine decides, once, when it reports the error;
    /// the store then retries on its own.
    public var mayPass = false
    /// The engine's own error underneath, such as a ``SQLiteError``.
    public var underlying: (any Error & Sendable)?

    public var description: String {
        var text = message
        for difference in differences { text += "\n  - \(difference)" }
        if let underlying { text += "\n  caused by: \(underlying)" }
        return text
    }

    /// Whether the database refused the change itself (a constraint, a value it cannot store,
    /// a row that is gone): the rest of a batch can commit without it.
    var refusesTheChange: Bool {
        code == .constraintRefused || code == .valueNotStorable || code == .rowNotFound
    }

    static func schemaMismatch(_ differences: [SchemaDifference]) -> StoreError {
        StoreError(
            code: .schemaMismatch,
            message: "the models do not match the database schema (\(differences.count) difference\(differences.count == 1 ? "" : "s")); migrate the database or change the models",
            differences: differences
        )
    }

    static func modelNotRegistered(_ type: Any.Type) -> StoreError {
        StoreError(code: .modelNotRegistered, message: "\(type) is not one of this store's models; pass it in `models:` when opening the store")
    }

    static func notAttached(_ type: Any.Type, operation: String) -> StoreError {
        StoreError(code: .notAttached, message: "cannot \(operation) a \(type) that this store does not manage; fetch it from the store or insert it first")
    }

    static func duplicateKey(_ type: Any.Type, key: SQLValue) -> StoreError {
        StoreError(code: .duplicateKey, message: "cannot insert a \(type) with key \(key): this store already has one; change the existing object instead, or delete it first")
    }

    static func closed(operation: String) -> StoreError {
        StoreError(code: .closed, message: "cannot \(operation): the store is closed; open a new ModelStore")
    }
}
