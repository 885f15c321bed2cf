import TrackedModels

/// The demo dataset's row.
@Tracked(table: "rows")
final class Row {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int64
}
