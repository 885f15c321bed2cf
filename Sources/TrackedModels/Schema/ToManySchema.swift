/// What deleting an object does to the children of one of its to-many relationships (as in
/// SwiftData). The store applies it in the same unit as the delete.
public enum DeleteRule: Sendable, Hashable {
    /// The children are deleted too (and their own rules applied).
    case cascade
    /// The children stay, pointing at nothing: their to-one becomes `nil`.
    case nullify
    /// The delete is refused while there are children: it throws and nothing changes.
    case deny
}

/// A to-many relationship of a ``TableSchema``: the property, the children's model and the
/// column of their to-one that points back, and the delete rule.
public struct ToManySchema: Sendable, Hashable {
    /// The property that holds the children.
    public let property: String
    /// The children's model type, by identity.
    public let child: ObjectIdentifier
    /// The children's model type's name, for messages.
    public let childName: String
    /// The property's key path, by which feeds name the relationship.
    // Unsafe only for the checker: a key path is an immutable value, and this one names a
    // property with no subscript arguments captured.
    nonisolated(unsafe) public let keyPath: AnyKeyPath
    /// The column of the children's to-one relationship that stores the parent's key.
    public let childColumn: Int
    public let deleteRule: DeleteRule

    /// A to-many relationship whose children point back through `inverse`.
    ///
    /// ```swift
    /// ToManySchema(property: "rows", \TodoList.rows, inverse: \Row.list, deleteRule: .cascade)
    /// ```
    ///
    /// - Parameters:
    ///   - property: The property that holds the children.
    ///   - keyPath: The same property's key path: its types must match the inverse's.
    ///   - inverse: The children's to-one relationship that stores the parent's key.
    ///   - deleteRule: What deleting the parent does to its children.
    public init<Parent: TrackedModel, Child: TrackedModel>(
        property: String, _ keyPath: KeyPath<Parent, [Child]>, inverse: ReferenceWritableKeyPath<Child, Parent?>,
        deleteRule: DeleteRule = .nullify
    ) {
        self.property = property
        self.keyPath = keyPath
        child = ObjectIdentifier(Child.self)
        childName = String(describing: Child.self)
        guard let column = Child._$columnIndex(of: inverse) else {
            preconditionFailure("\(property): the inverse \(inverse) is not a stored to-one relationship of \(Child.self)")
        }
        childColumn = column
        self.deleteRule = deleteRule
    }
}
