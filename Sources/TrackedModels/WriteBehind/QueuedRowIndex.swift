/// Where each row's queued operations lie (in flight, then pending, in program order), so that
/// a read of many rows over many queued changes finds a row's operations without walking them
/// all: a live list judging 30,000 pending rows, a fetch, a count.
///
/// It is a snapshot: ``WriteBehind`` builds it from its queued units when a burst of reads asks
/// for it, and drops it whenever they change.
struct QueuedRowIndex {
    /// An operation's place: its unit among the queued ones, and its place in that unit.
    private struct Position: Comparable {
        var unit: Int
        var operation: Int

        static func < (left: Position, right: Position) -> Bool {
            (left.unit, left.operation) < (right.unit, right.operation)
        }
    }

    private var units: [WriteUnit] = []
    /// The operations that name a row, by the row: inserts with a key, updates, deletes.
    private var byRow: [RowReference: [Position]] = [:]
    /// Deletes of every row, by table.
    private var deletesOfEveryRow: [Int: [Position]] = [:]

    init(_ queued: some Sequence<WriteUnit>) {
        for unit in queued {
            let index = units.count
            units.append(unit)
            for (offset, operation) in unit.operations.enumerated() {
                let position = Position(unit: index, operation: offset)
                switch operation {
                case .deleteAll(let table): deletesOfEveryRow[table, default: []].append(position)
                default: if let row = operation.row { byRow[row, default: []].append(position) }
                }
            }
        }
    }

    /// Calls `body` with each queued operation that touches `row` (names it, or deletes every
    /// row of its table), in program order.
    func forEachOperation(touching row: RowReference, _ body: (WriteOperation) -> Void) {
        let own = byRow[row] ?? []
        let everyRow = deletesOfEveryRow[row.table] ?? []
        var (next, nextOfEveryRow) = (0, 0)
        while next < own.count || nextOfEveryRow < everyRow.count {
            let takesOwn = nextOfEveryRow == everyRow.count || next < own.count && own[next] < everyRow[nextOfEveryRow]
            let position = takesOwn ? own[next] : everyRow[nextOfEveryRow]
            if takesOwn { next += 1 } else { nextOfEveryRow += 1 }
            body(units[position.unit].operations[position.operation])
        }
    }
}

extension QueuedRowIndex {
    /// What a ``WriteBehind`` holds of the index since its queued units last changed.
    enum Slot {
        /// No read has looked up a row since.
        case unused
        /// A read has, by walking the queued units, which hold `operations` operations.
        case walked(operations: Int)
        case built(QueuedRowIndex)

        /// Fewer queued operations than this are walked for every lookup: building the index
        /// would cost more than the walks it saves.
        static let walkedBelow = 64
    }
}
