import Foundation
import TrackedModels

/// The demo row: `{id, title, count}`.
@Tracked(table: "rows")
final class Row {
    @PrimaryKey var id: Int64
    var title: String
    var count: Int
    @Transient var isSelected = false
}

enum Priority: Int, ColumnValue, Codable {
    case low = 1, high = 2
}

enum Mood: String, ColumnValue {
    case calm, excited
}

/// One column of every supported type, with an auto-assigned key.
@Tracked(table: "samples")
final class Sample {
    @PrimaryKey var id: Int64?
    var flag: Bool
    var int: Int
    var int64: Int64
    var int32: Int32
    var double: Double
    var string: String
    var data: Data
    var date: Date
    var uuid: UUID
    var priority: Priority
    @Column("mood_name") var mood: Mood
    var optionalFlag: Bool?
    var optionalInt: Int?
    var optionalInt64: Int64?
    var optionalInt32: Int32?
    var optionalDouble: Double?
    var optionalString: String?
    var optionalData: Data?
    var optionalDate: Date?
    var optionalUUID: UUID?
    var optionalPriority: Priority?
}
