// What the accessors `@Tracked` generates call for a column that stores a ``ColumnValue``. A
// to-one relationship's column has overloads of each (ToOneAccessors.swift); the type checker
// picks by the property's type, so the macro generates the same code for both.

/// Decodes a value from the database for a column property. Used by generated code.
@inlinable public func _$decode<Value: ColumnValue>(_ value: SQLValue, current: Value, column: Int, tracking: ModelTracking) throws -> Value {
    try Value(sqlValue: value)
}

/// The value a column property stores. Used by generated code.
@inlinable public func _$storedValue<Value: ColumnValue>(_ value: Value, column: Int, tracking: ModelTracking) -> SQLValue {
    value.sqlValue
}

/// What reading a column property returns: its value. Used by generated code.
@inlinable @inline(__always)
public func _$read<Value: ColumnValue>(_ value: Value, column: Int, tracking: ModelTracking, cache: (Value) -> Void) -> Value {
    value
}

/// The object a column property points at: none. Used by generated code.
@inlinable public func _$relatedObject<Value: ColumnValue>(_ value: Value) -> (any TrackedModel)? {
    nil
}

/// Puts back a relationship's object: a column value has none. Used by generated code.
@inlinable public func _$setRelatedObject<Value: ColumnValue>(_ object: (any TrackedModel)?, in storage: inout Value) {}
