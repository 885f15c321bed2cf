import SwiftDiagnostics

/// Everything `@Tracked` can say about a class it cannot expand, each with what to do.
enum TrackedDiagnostic: DiagnosticMessage {
    case notAClass(kind: String)
    case missingTypeAnnotation(property: String)
    case unsupportedType(property: String, type: String)
    case noPrimaryKey(type: String)
    case multiplePrimaryKeys(properties: [String])
    case letColumn(property: String)
    case multipleBindings
    case propertyObservers(property: String)
    case lazyColumn(property: String)
    case transientWithoutDefault(property: String)
    case toManyWithoutInverse(property: String)
    case toManyNotAnArray(property: String)
    case toManyWithoutDefault(property: String)

    var message: String {
        switch self {
        case .notAClass(let kind):
            "@Tracked applies to classes only, not to \(kind) types; declare the model as a 'final class'"
        case .missingTypeAnnotation(let property):
            "stored property '\(property)' needs a type annotation to become a column, such as '\(property): Int'"
        case .unsupportedType(let property, let type):
            "'\(property)' has type '\(type)', which cannot be stored in a column; use Bool, Int, Int64, Int32, Double, String, Data, Date, UUID, an Optional of one, or a type conforming to ColumnValue, or mark it @Transient"
        case .noPrimaryKey(let type):
            "'\(type)' has no primary key; mark one stored property with @PrimaryKey"
        case .multiplePrimaryKeys(let properties):
            "only one property can be the primary key, but \(properties.map { "'\($0)'" }.joined(separator: " and ")) are marked @PrimaryKey; remove @PrimaryKey from all but one"
        case .letColumn(let property):
            "column '\(property)' must be declared with 'var' so the store can track it; use 'var', or mark it @Transient"
        case .multipleBindings:
            "declare one column per 'var', so that each can be tracked on its own"
        case .propertyObservers(let property):
            "column '\(property)' cannot have willSet/didSet; subscribe to its changes through the store's feeds instead"
        case .lazyColumn(let property):
            "column '\(property)' cannot be lazy; give it a value in the initializer, or mark it @Transient"
        case .transientWithoutDefault(let property):
            "@Transient property '\(property)' needs a default value, because objects read from the database are made without it"
        case .toManyWithoutInverse(let property):
            "to-many relationship '\(property)' needs its inverse, the children's to-one that stores it: @Relationship(inverse: \\Child.parent)"
        case .toManyNotAnArray(let property):
            "to-many relationship '\(property)' must be an array of the child model, such as '\(property): [Row]'"
        case .toManyWithoutDefault(let property):
            "to-many relationship '\(property)' must be a 'var' with the default value '[]': its children are read from the database"
        }
    }

    var diagnosticID: MessageID {
        MessageID(domain: "TrackedMacros", id: "\(self)".prefix { $0 != "(" }.description)
    }

    var severity: DiagnosticSeverity { .error }
}

/// A fix-it's title.
struct TrackedFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "TrackedMacros", id: message) }
}
