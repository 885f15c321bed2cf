/// The open levels of `store.transaction { }`, outermost first, and the steps that take back
/// what each level did. A level that fails hands back its steps, newest first, for the
/// registrar to undo; one that succeeds leaves them to the level around it, and the outermost
/// lets them go. It only keeps records: it calls out to nothing.
///
/// ```swift
/// var log = UndoLog()
/// log.open(snapshot: nil, outboxMark: 0)
/// log.recordFirst(.assigned(row, column: 2, old: 0), of: UndoLog.Cell(object: ObjectIdentifier(row), column: 2))
/// let (_, undo) = log.close(succeeded: false)   // undo == [.assigned(row, column: 2, old: 0)]
/// ```
struct UndoLog {
    /// One open level of `store.transaction { }`.
    struct Level {
        /// The transaction's unit as the level found it (`nil` for the outermost level).
        var snapshot: PendingChanges.Unit?
        /// Where the level's events start in the outbox's log.
        var outboxMark: Int
        /// Where the level's steps start among the log's steps.
        fileprivate var firstStep: Int
        /// The cells whose value before this level is already among the steps: undoing needs
        /// only the first, so a million increments in a transaction keep one step.
        fileprivate var cellsSaved: Set<Cell> = []
        /// What reads made during the level (live results) do to show again what the store
        /// shows once it ends: they took in part of its changes, which its events (the net
        /// change of the whole transaction, or none if it fails) do not tell them from.
        var whenEnded: [() -> Void] = []
    }

    /// A cell of an object, whose value before the level is saved once.
    struct Cell: Hashable {
        var object: ObjectIdentifier
        var column: Int
    }

    /// How to take back one change of a transaction that failed.
    enum Step {
        case assigned(any TrackedModel, column: Int, old: SQLValue)
        /// A to-one relationship pointed elsewhere: the object it held, and its key.
        case related(any TrackedModel, column: Int, target: (any TrackedModel)?, key: SQLValue)
        /// An object inserted, and whether the store had taken its pending children before.
        case inserted(any TrackedModel, table: Int, handedOverChildren: Bool)
        /// An object deleted, with its values then: undoing also takes back what was assigned
        /// to it while it was detached.
        case deleted(any TrackedModel, table: Int, key: SQLValue, values: [SQLValue], targets: [Int: any TrackedModel])
        case deletedAll(
            [(key: SQLValue, object: any TrackedModel, values: [SQLValue], targets: [Int: any TrackedModel])],
            waiting: [(request: UInt64, entry: IdentityMap.Unkeyed, values: [SQLValue], targets: [Int: any TrackedModel])],
            table: Int
        )
    }

    private var levels: [Level] = []
    private var steps: [Step] = [] { didSet { deletedRows = nil } }
    /// The objects of rows the open transaction deleted, by row, built from the steps when
    /// first asked (see ``objectDeleted(in:)``), dropped when the steps change.
    private var deletedRows: [RowReference: any TrackedModel]?

    /// Whether a transaction is open.
    var isOpen: Bool { !levels.isEmpty }

    /// Opens a level inside the open ones (or the outermost).
    mutating func open(snapshot: PendingChanges.Unit?, outboxMark: Int) {
        levels.append(Level(snapshot: snapshot, outboxMark: outboxMark, firstStep: steps.count))
    }

    /// Records `step`, which takes back a change of `cell`, where the innermost level has none
    /// for that cell yet.
    mutating func recordFirst(_ step: Step, of cell: Cell) {
        guard levels[levels.count - 1].cellsSaved.insert(cell).inserted else { return }
        steps.append(step)
    }

    /// Records `step` in the innermost level.
    mutating func record(_ step: Step) {
        steps.append(step)
    }

    /// Runs `handler` when the innermost level fails, again if an enclosing level fails, and
    /// when the outermost ends (see ``ModelRegistrar/whenTransactionEnds(_:)``).
    mutating func whenEnded(_ handler: @escaping () -> Void) {
        levels[levels.count - 1].whenEnded.append(handler)
    }

    /// The object of a row the open transaction deleted, as the steps hold it.
    mutating func objectDeleted(in row: RowReference) -> (any TrackedModel)? {
        if deletedRows == nil {
            var deleted: [RowReference: any TrackedModel] = [:]
            for step in steps {
                switch step {
                case .deleted(let object, let table, let key, _, _):
                    deleted[RowReference(table: table, key: key)] = object
                case .deletedAll(let objects, _, let table):
                    for entry in objects { deleted[RowReference(table: table, key: entry.key)] = entry.object }
                default:
                    continue
                }
            }
            deletedRows = deleted
        }
        return deletedRows?[row]
    }

    /// Closes the innermost level. On success its saved cells and handlers go to the level
    /// around it; on failure its steps are returned, newest first, to undo.
    mutating func close(succeeded: Bool) -> (level: Level, undo: [Step]) {
        let level = levels.removeLast()
        var undo: [Step] = []
        if !succeeded {
            undo = steps[level.firstStep...].reversed()
            steps.removeSubrange(level.firstStep...)
        } else if !levels.isEmpty {
            // The inner level's first values are the outer level's too, where it had none.
            levels[levels.count - 1].cellsSaved.formUnion(level.cellsSaved)
            levels[levels.count - 1].whenEnded += level.whenEnded
        }
        if levels.isEmpty { steps.removeAll() }
        return (level, undo)
    }
}
