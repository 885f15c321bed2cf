/// One row read from a model's table, with its values in column order.
///
/// The generated `init(_$row:)` reads it; decoding errors name the table, column and row.
public struct ModelRow: Sendable {
    let schema: TableSchema
    let values: [SQLValue]

    init(schema: TableSchema, values: [SQLValue]) {
        self.schema = schema
        self.values = values
    }

    /// Decodes the value of a column into its property's type.
    public func decode<Value: ColumnValue>(at index: Int) throws -> Value {
        do {
            return try Value(sqlValue: values[index])
        } catch {
            let column = schema.columns[index]
            throw StoreError(
                code: .decodingFailed,
                message: "cannot read \(schema.name).\(column.name) of row \(values[schema.primaryKeyIndex]) into \(column.property): \(error); fix the stored value or the property's type",
                underlying: error as? ValueDecodingError
            )
        }
    }
}
