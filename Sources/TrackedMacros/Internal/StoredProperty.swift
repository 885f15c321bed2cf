import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// A stored property of a `@Tracked` class, as the macros see it.
struct StoredProperty {
    let declaration: VariableDeclSyntax
    let name: String
    let type: TypeSyntax?
    let initializer: ExprSyntax?
    let isTransient: Bool
    /// `@ObservationIgnored`: neither stored nor observed. (`@Transient` is observed.)
    let isObservationIgnored: Bool
    let isPrimaryKey: Bool
    /// `@Relationship(...)`: a to-many relationship, derived from its inverse, not a column.
    let isToMany: Bool
    /// The `inverse:` argument of `@Relationship`: a key path to the children's to-one.
    let inverse: ExprSyntax?
    /// The `deleteRule:` argument of `@Relationship`, if given.
    let deleteRule: ExprSyntax?
    /// The `@Column("name")` argument, if any: otherwise the library names the column (the
    /// property's name, or `list_id` for a to-one relationship `list`).
    let explicitColumnName: String?

    /// The stored properties of a class body, in order. Computed and static properties are not
    /// among them.
    static func all(in members: MemberBlockItemListSyntax) -> [StoredProperty] {
        members.compactMap { $0.decl.as(VariableDeclSyntax.self) }.compactMap(StoredProperty.init)
    }

    init?(_ declaration: VariableDeclSyntax) {
        guard !declaration.modifiers.contains(where: { ["static", "class"].contains($0.name.text) }),
              let binding = declaration.bindings.first,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self)
        else { return nil }
        if let accessors = binding.accessorBlock?.accessors {
            // A getter-only block or get/set is computed; willSet/didSet observe a stored property.
            guard case .accessors(let list) = accessors,
                  list.allSatisfy({ ["willSet", "didSet"].contains($0.accessorSpecifier.text) })
            else { return nil }
        }
        self.declaration = declaration
        name = identifier.identifier.trimmedDescription
        type = binding.typeAnnotation?.type
        initializer = binding.initializer?.value
        isObservationIgnored = declaration.hasAttribute("ObservationIgnored")
        isTransient = declaration.hasAttribute("Transient") || isObservationIgnored
        isPrimaryKey = declaration.hasAttribute("PrimaryKey")
        let relationship = declaration.attribute("Relationship")
        isToMany = relationship != nil
        inverse = relationship?.argument(labeled: "inverse")
        deleteRule = relationship?.argument(labeled: "deleteRule")
        explicitColumnName = declaration.attribute("Column")?.firstStringArgument
    }

    var isColumn: Bool { !isTransient && !isToMany }

    /// The element type of a to-many relationship's array type: `Row` for `[Row]`.
    var elementType: String? {
        type?.as(ArrayTypeSyntax.self)?.element.trimmedDescription
    }

    var isOptional: Bool {
        guard let type else { return false }
        if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return true }
        return type.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }

    /// The type without its optionality: `Int64` for `Int64?` or `Optional<Int64>`.
    var nonOptionalType: String {
        guard let type else { return "Swift.Never" }
        if let optional = type.as(OptionalTypeSyntax.self) { return optional.wrappedType.trimmedDescription }
        if let optional = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return optional.wrappedType.trimmedDescription }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional",
           let argument = identifier.genericArgumentClause?.arguments.first {
            return argument.argument.trimmedDescription
        }
        return type.trimmedDescription
    }

    /// Problems that keep this property from being a column, each at its place in the source.
    func diagnostics() -> [Diagnostic] {
        var found: [Diagnostic] = []
        if declaration.bindings.count > 1 {
            found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.multipleBindings))
        }
        if isToMany {
            if inverse == nil {
                found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.toManyWithoutInverse(property: name)))
            }
            if elementType == nil {
                found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.toManyNotAnArray(property: name)))
            }
            if initializer == nil || declaration.bindingSpecifier.tokenKind != .keyword(.var) {
                found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.toManyWithoutDefault(property: name)))
            }
            return found
        }
        if isTransient {
            if initializer == nil {
                found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.transientWithoutDefault(property: name)))
            }
            return found
        }
        if declaration.bindingSpecifier.tokenKind == .keyword(.let) {
            let fixed = declaration.bindingSpecifier.with(\.tokenKind, .keyword(.var))
            found.append(Diagnostic(
                node: declaration.bindingSpecifier,
                message: TrackedDiagnostic.letColumn(property: name),
                fixIt: FixIt(message: TrackedFixIt(message: "Replace 'let' with 'var'"),
                             changes: [.replace(oldNode: Syntax(declaration.bindingSpecifier), newNode: Syntax(fixed))])
            ))
        }
        if declaration.modifiers.contains(where: { $0.name.text == "lazy" }) {
            found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.lazyColumn(property: name)))
        }
        if declaration.bindings.first?.accessorBlock != nil {
            found.append(Diagnostic(node: declaration, message: TrackedDiagnostic.propertyObservers(property: name)))
        }
        if let type {
            if let unsupported = Self.unsupportedTypeName(type) {
                found.append(Diagnostic(node: type, message: TrackedDiagnostic.unsupportedType(property: name, type: unsupported)))
            }
        } else {
            found.append(Diagnostic(node: declaration.bindings.first!.pattern, message: TrackedDiagnostic.missingTypeAnnotation(property: name)))
        }
        return found
    }

    /// Types known not to fit a column: collections, tuples, functions, and numeric types that
    /// SQLite cannot hold exactly. Other names are checked by the compiler (`ColumnValue`).
    private static let unsupportedNames: Set<String> = [
        "Array", "Dictionary", "Set", "Any", "AnyObject", "Float", "Float16", "Float80", "CGFloat",
        "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Character", "Decimal", "Void",
    ]

    private static func unsupportedTypeName(_ type: TypeSyntax) -> String? {
        if let optional = type.as(OptionalTypeSyntax.self) { return unsupportedTypeName(optional.wrappedType) }
        if type.is(ArrayTypeSyntax.self) || type.is(DictionaryTypeSyntax.self) || type.is(TupleTypeSyntax.self)
            || type.is(FunctionTypeSyntax.self) || type.is(SomeOrAnyTypeSyntax.self) || type.is(CompositionTypeSyntax.self)
        {
            return type.trimmedDescription
        }
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            if identifier.name.text == "Optional", let wrapped = identifier.genericArgumentClause?.arguments.first,
               case .type(let wrappedType) = wrapped.argument
            {
                return unsupportedTypeName(wrappedType) == nil ? nil : type.trimmedDescription
            }
            return unsupportedNames.contains(identifier.name.text) ? type.trimmedDescription : nil
        }
        return nil
    }
}

extension VariableDeclSyntax {
    func attribute(_ name: String) -> AttributeSyntax? {
        for element in attributes {
            guard case .attribute(let attribute) = element else { continue }
            let attributeName = attribute.attributeName.trimmedDescription
            if attributeName == name || attributeName.hasSuffix(".\(name)") { return attribute }
        }
        return nil
    }

    func hasAttribute(_ name: String) -> Bool {
        attribute(name) != nil
    }
}

extension AttributeSyntax {
    /// The expression of a labeled argument: `\Row.list` in `@Relationship(inverse: \Row.list)`.
    func argument(labeled label: String) -> ExprSyntax? {
        guard case .argumentList(let arguments) = self.arguments else { return nil }
        return arguments.first { $0.label?.text == label }?.expression
    }

    /// The text of a first argument that is a plain string literal: `"name"` in `@Column("name")`.
    var firstStringArgument: String? {
        guard case .argumentList(let arguments) = self.arguments,
              let literal = arguments.first?.expression.as(StringLiteralExprSyntax.self),
              literal.segments.count == 1,
              case .stringSegment(let segment) = literal.segments.first
        else { return nil }
        return segment.content.text
    }
}
