import TrackedModels

/// The demo dataset's row: an item of one of the lists.
@Tracked(table: "rows")
final class Row {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int64
    var list: TodoList?
}

/// The demo dataset's list: ten of them share the rows.
@Tracked(table: "lists")
final class TodoList {
    @PrimaryKey var id: Int64
    var title: String
    @Relationship(inverse: \Row.list) var rows: [Row] = []
}

extension TodoList {
    /// The demo lists: "List 1" to "List 10".
    static let demoCount: Int64 = 10

    /// The list a seeded row belongs to: row N to list N mod 10 + 1.
    static func demoKey(ofRow id: Int64) -> Int64 {
        id % demoCount + 1
    }
}
