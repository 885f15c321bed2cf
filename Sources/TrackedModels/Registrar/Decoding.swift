/// Decodes a stored value into the type the caller expects. Used by generated code.
public func _$decode<Value: ColumnValue>(_ value: SQLValue) throws -> Value {
    try Value(sqlValue: value)
}
