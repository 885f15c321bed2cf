import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@Tracked(table:)`: makes a class a stored, observable model.
///
/// Generated names are `_$`-prefixed and generated types fully qualified, so user names cannot
/// collide with them. Misuse is diagnosed (all problems at once) and then nothing is generated.
public struct TrackedMacro {
    static let moduleName = "TrackedModels"
    static let columnMacroName = "_TrackedColumn"
    static let transientMacroName = "_TrackedTransient"
    static let toManyMacroName = "_TrackedToMany"

    /// The class's column properties, or `nil` after diagnosing why it cannot be expanded.
    static func columns(
        of declaration: some DeclGroupSyntax,
        attribute: AttributeSyntax,
        in context: some MacroExpansionContext,
        diagnose: Bool
    ) -> (className: String, columns: [StoredProperty])? {
        guard let classDeclaration = declaration.as(ClassDeclSyntax.self) else {
            if diagnose {
                let kind = declaration.is(StructDeclSyntax.self) ? "struct"
                    : declaration.is(EnumDeclSyntax.self) ? "enum"
                    : declaration.is(ActorDeclSyntax.self) ? "actor"
                    : declaration.is(ProtocolDeclSyntax.self) ? "protocol" : "extension"
                context.diagnose(Diagnostic(node: attribute, message: TrackedDiagnostic.notAClass(kind: kind)))
            }
            return nil
        }
        let properties = StoredProperty.all(in: classDeclaration.memberBlock.members)
        var diagnostics = properties.flatMap { $0.diagnostics() }
        let columns = properties.filter(\.isColumn)
        let keys = columns.filter(\.isPrimaryKey)
        let className = classDeclaration.name.trimmedDescription
        if keys.isEmpty {
            diagnostics.append(Diagnostic(node: classDeclaration.name, message: TrackedDiagnostic.noPrimaryKey(type: className)))
        } else if keys.count > 1 {
            for key in keys.dropFirst() {
                diagnostics.append(Diagnostic(
                    node: key.declaration.attribute("PrimaryKey")!,
                    message: TrackedDiagnostic.multiplePrimaryKeys(properties: keys.map(\.name))
                ))
            }
        }
        guard diagnostics.isEmpty else {
            if diagnose { diagnostics.forEach(context.diagnose) }
            return nil
        }
        return (className, columns)
    }

    /// The access level of generated members that satisfy the protocol: the class's own.
    static func accessModifier(of declaration: some DeclGroupSyntax) -> String {
        for modifier in declaration.modifiers {
            switch modifier.name.text {
            case "open", "public": return "public "
            case "package": return "package "
            default: continue
            }
        }
        return ""
    }

    static func tableName(from attribute: AttributeSyntax) -> String? {
        guard case .argumentList(let arguments) = attribute.arguments,
              let argument = arguments.first(where: { $0.label?.text == "table" }),
              let literal = argument.expression.as(StringLiteralExprSyntax.self),
              case .stringSegment(let segment)? = literal.segments.first, literal.segments.count == 1
        else { return nil }
        return segment.content.text
    }
}

extension TrackedMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (className, columns) = Self.columns(of: declaration, attribute: node, in: context, diagnose: true) else {
            return []
        }
        guard let table = tableName(from: node) else {
            context.diagnose(Diagnostic(node: node, message: MacroExpansionErrorMessage(
                "@Tracked needs the table name as a string literal, such as @Tracked(table: \"rows\")"
            )))
            return []
        }
        let access = accessModifier(of: declaration)
        let module = moduleName
        // The same code for a column value and a to-one relationship (a property whose type is
        // an optional model): the library's overloads of each call tell them apart by type.
        let schemaColumns = columns.map { column in
            let name = column.explicitColumnName.map(literal) ?? "nil"
            return "\(module).ColumnSchema(name: \(name), property: \(literal(column.name)), \(column.type!.trimmedDescription).self\(column.isPrimaryKey ? ", isPrimaryKey: true" : ""))"
        }
        let decodes = columns.enumerated().map { "self._\($1.name) = try row.decode(at: \($0))" }
        let values = columns.enumerated().map { "\(module)._$storedValue(self._\($1.name), column: \($0), tracking: self._$tracking)" }
        let assigns = columns.enumerated().map { index, column in
            "case \(index): let decoded: \(column.type!.trimmedDescription) = try \(module)._$decode(value, current: self._\(column.name), column: \(index), tracking: self._$tracking)\n"
                + "withMutation(keyPath: \\.\(column.name)) { self._\(column.name) = decoded }"
        }
        let toMany = StoredProperty.all(in: declaration.memberBlock.members).filter(\.isToMany)
        let relationships = toMany.map { property in
            "\(module).ToManySchema(property: \(literal(property.name)), \\\(className).\(property.name), inverse: \(property.inverse!.trimmedDescription)"
                + (property.deleteRule.map { ", deleteRule: \($0.trimmedDescription)" } ?? "") + ")"
        }
        let childrenChanged = toMany.enumerated().map { "case \($0): withMutation(keyPath: \\.\($1.name)) {}" }
        let pending = toMany.enumerated().map { "case \($0): self._\($1.name)" }
        let related = columns.enumerated().map { "case \($0): \(module)._$relatedObject(self._\($1.name))" }
        let relating = columns.enumerated().map { index, column in
            "case \(index): withMutation(keyPath: \\.\(column.name)) { \(module)._$setRelatedObject(object, in: &self._\(column.name)) }"
        }
        guard let key = columns.first(where: \.isPrimaryKey) else { return [] }
        let keyPaths = columns.enumerated().map { "case \\\(className).\($1.name): \($0)" }
        let columnKeyPaths = columns.map { "\\\(className).\($0.name)" }
        let chainedKeyPaths = columns.map { "\\\(className)?.?.\($0.name)" }

        var members: [DeclSyntax] = [
            "private let _$observationRegistrar = Observation.ObservationRegistrar()",
            "\(raw: access)let _$tracking = \(raw: module).ModelTracking()",
            """
            \(raw: access)static let _$schema = \(raw: module).TableSchema(
                name: \(raw: literal(table)),
                columns: [
                    \(raw: schemaColumns.joined(separator: ",\n"))
                ],
                relationships: [\(raw: relationships.joined(separator: ",\n"))]
            )
            """,
            """
            \(raw: access)required init(_$row row: \(raw: module).ModelRow) throws {
                \(raw: decodes.joined(separator: "\n"))
                self._$tracking.adoptForeignKeys(from: row)
            }
            """,
            """
            \(raw: access)func _$values() -> [\(raw: module).SQLValue] {
                [\(raw: values.joined(separator: ", "))]
            }
            """,
            """
            \(raw: access)func _$value(ofColumn index: Swift.Int) -> \(raw: module).SQLValue {
                switch index {
                \(raw: values.enumerated().map { "case \($0): \($1)" }.joined(separator: "\n"))
                default: .null
                }
            }
            """,
            """
            \(raw: access)func _$assign(_ value: \(raw: module).SQLValue, toColumn index: Swift.Int) throws {
                switch index {
                \(raw: assigns.joined(separator: "\n"))
                default: break
                }
            }
            """,
            """
            \(raw: access)func _$relatedObject(column index: Swift.Int) -> (any \(raw: module).TrackedModel)? {
                switch index {
                \(raw: related.joined(separator: "\n"))
                default: nil
                }
            }
            """,
            """
            \(raw: access)func _$setRelatedObject(_ object: (any \(raw: module).TrackedModel)?, column index: Swift.Int) {
                switch index {
                \(raw: relating.joined(separator: "\n"))
                default: break
                }
            }
            """,
            """
            \(raw: access)func _$childrenChanged(relationship index: Swift.Int) {
                switch index {
                \(raw: childrenChanged.joined(separator: "\n"))
                default: break
                }
            }
            """,
            """
            \(raw: access)func _$pendingChildren(relationship index: Swift.Int) -> [any \(raw: module).TrackedModel] {
                switch index {
                \(raw: pending.joined(separator: "\n"))
                default: []
                }
            }
            """,
            """
            \(raw: access)var _$primaryKey: \(raw: module).SQLValue {
                \(raw: module)._$storedValue(self._\(raw: key.name), column: \(raw: columns.firstIndex(where: \.isPrimaryKey)!), tracking: self._$tracking)
            }
            """,
            "\(raw: access)typealias PrimaryKeyValue = \(raw: key.nonOptionalType)",
            """
            \(raw: access)static func _$columnIndex(of keyPath: Swift.AnyKeyPath) -> Swift.Int? {
                switch keyPath {
                \(raw: keyPaths.joined(separator: "\n"))
                default: nil
                }
            }
            """,
            """
            \(raw: access)static var _$columnKeyPaths: [Swift.AnyKeyPath] {
                [\(raw: columnKeyPaths.joined(separator: ", "))]
            }
            """,
            """
            \(raw: access)static var _$chainedKeyPaths: [Swift.AnyKeyPath] {
                [\(raw: chainedKeyPaths.joined(separator: ", "))]
            }
            """,
            """
            internal nonisolated func access<Member>(keyPath: Swift.KeyPath<\(raw: className), Member>) {
                _$observationRegistrar.access(self, keyPath: keyPath)
            }
            """,
            """
            internal nonisolated func withMutation<Member, MutationResult>(
                keyPath: Swift.KeyPath<\(raw: className), Member>,
                _ mutation: () throws -> MutationResult
            ) rethrows -> MutationResult {
                try _$observationRegistrar.withMutation(of: self, keyPath: keyPath, mutation)
            }
            """,
        ]
        if !declaresInitializer(declaration) {
            members.append(memberwiseInitializer(columns: columns, access: access))
        }
        return members
    }

    private static func declaresInitializer(_ declaration: some DeclGroupSyntax) -> Bool {
        declaration.memberBlock.members.contains { $0.decl.is(InitializerDeclSyntax.self) }
    }

    /// `init(id:title:count:)` for a class that declares no initializer, defaulting what the
    /// declaration gives a value (and optionals to `nil`), as a struct's memberwise init does.
    private static func memberwiseInitializer(columns: [StoredProperty], access: String) -> DeclSyntax {
        let parameters = columns.map { column in
            var parameter = "\(column.name): \(column.type!.trimmedDescription)"
            if let initializer = column.initializer {
                parameter += " = \(initializer.trimmedDescription)"
            } else if column.isOptional {
                parameter += " = nil"
            }
            return parameter
        }
        let assignments = columns.map { "self.\($0.name) = \($0.name)" }
        return """
            \(raw: access)init(\(raw: parameters.joined(separator: ", "))) {
                \(raw: assignments.joined(separator: "\n"))
            }
            """
    }

    private static func literal(_ text: String) -> String {
        StringLiteralExprSyntax(content: text).trimmedDescription
    }
}

extension TrackedMacro: MemberAttributeMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard let variable = member.as(VariableDeclSyntax.self),
              let property = StoredProperty(variable), !property.isObservationIgnored,
              let (_, columns) = Self.columns(of: declaration, attribute: node, in: context, diagnose: false)
        else { return [] }
        if property.isToMany { return ["@\(raw: moduleName).\(raw: toManyMacroName)"] }
        // A transient property is observed like an `@Observable` one, but never stored.
        guard property.isColumn else { return ["@\(raw: moduleName).\(raw: transientMacroName)"] }
        guard let index = columns.firstIndex(where: { $0.name == property.name }) else { return [] }
        return ["@\(raw: moduleName).\(raw: columnMacroName)(\(raw: index))"]
    }
}

extension TrackedMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard Self.columns(of: declaration, attribute: node, in: context, diagnose: false) != nil else { return [] }
        let needed = protocols.map(\.trimmedDescription)
        // A @MainActor class's members are main-actor isolated, so its conformance must be too.
        let isolation = declaration.attributes.contains { $0.as(AttributeSyntax.self)?.attributeName.trimmedDescription == "MainActor" }
            ? "@MainActor " : ""
        let conformances = [("TrackedModel", "\(isolation)\(moduleName).TrackedModel"), ("Observable", "Observation.Observable")]
            .filter { name, _ in needed.contains { $0 == name || $0.hasSuffix(".\(name)") } }
            .map(\.1)
        guard !conformances.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): \(raw: conformances.joined(separator: ", ")) {}")]
    }
}
