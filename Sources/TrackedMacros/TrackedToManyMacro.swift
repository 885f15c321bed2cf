public import SwiftSyntax
public import SwiftSyntaxMacros
import SwiftSyntaxBuilder

/// `@_TrackedToMany`, attached by `@Tracked` to each `@Relationship` property: reads the
/// children through the store (the rows whose to-one, the inverse, points at this object), and
/// an assignment re-points the children that join or leave.
public struct TrackedToManyMacro {}

extension TrackedToManyMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), let property = StoredProperty(variable),
              let inverse = property.inverse?.trimmedDescription
        else { return [] }
        let name = property.name
        return [
            initAccessor(for: name),
            """
            get {
                access(keyPath: \\.\(raw: name))
                return TrackedModels._$children(of: self, inverse: \(raw: inverse), pending: _\(raw: name))
            }
            """,
            """
            set {
                withMutation(keyPath: \\.\(raw: name)) {
                    _\(raw: name) = TrackedModels._$setChildren(newValue, of: self, inverse: \(raw: inverse), replacing: _\(raw: name))
                }
            }
            """,
        ]
    }
}

extension TrackedToManyMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try TrackedColumnMacro.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}
