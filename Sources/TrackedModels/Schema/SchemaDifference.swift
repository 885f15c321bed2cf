/// One way a model differs from the table it maps onto.
public struct SchemaDifference: Sendable, Hashable, CustomStringConvertible {
    public var table: String
    /// The column, or `nil` when the whole table is missing.
    public var column: String?
    /// What is wrong and what to do, in one sentence.
    public var problem: String

    public var description: String {
        if let column { "\(table).\(column): \(problem)" } else { "\(table): \(problem)" }
    }
}
