public import SwiftSyntax
public import SwiftSyntaxMacros
import SwiftSyntaxBuilder

/// `@_TrackedColumn(index)`, attached by `@Tracked` to each column property: routes reads and
/// writes through `Observation` and the store's registrar, over a `_name` backing property.
public struct TrackedColumnMacro {}

/// The `init` accessor every generated property has: the initial value goes to the backing
/// property, so that the class's own initializers and default values work unchanged.
func initAccessor(for name: String) -> AccessorDeclSyntax {
    """
    @storageRestrictions(initializes: _\(raw: name))
    init(initialValue) {
        _\(raw: name) = initialValue
    }
    """
}

extension TrackedColumnMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
              let property = StoredProperty(variable),
              case .argumentList(let arguments) = node.arguments,
              let index = arguments.first?.expression.trimmedDescription
        else { return [] }
        let name = property.name
        return [
            initAccessor(for: name),
            """
            get {
                _$tracking.access(column: \(raw: index))
                access(keyPath: \\.\(raw: name))
                return TrackedModels._$read(_\(raw: name), column: \(raw: index), tracking: _$tracking) { _\(raw: name) = $0 }
            }
            """,
            """
            set {
                guard !TrackedModels._$isSameStoredValue(_\(raw: name), newValue, column: \(raw: index), tracking: _$tracking) else { return }
                let oldValue = _\(raw: name)
                withMutation(keyPath: \\.\(raw: name)) {
                    _\(raw: name) = newValue
                }
                _$tracking.userDidSet(self, column: \(raw: index), from: oldValue, to: newValue)
            }
            """,
        ]
    }
}

extension TrackedColumnMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
              let property = StoredProperty(variable)
        else { return [] }
        let type = property.type.map { ": \($0.trimmedDescription)" } ?? ""
        let initializer = property.initializer.map { " = \($0.trimmedDescription)" } ?? ""
        return ["private var _\(raw: property.name)\(raw: type)\(raw: initializer)"]
    }
}

/// `@_TrackedTransient`, attached by `@Tracked` to each `@Transient` property: observed through
/// `Observation` like an `@Observable` property, over a `_name` backing property, and never
/// reported to the store.
public struct TrackedTransientMacro {}

extension TrackedTransientMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), let property = StoredProperty(variable) else { return [] }
        let name = property.name
        return [
            initAccessor(for: name),
            """
            get {
                access(keyPath: \\.\(raw: name))
                return _\(raw: name)
            }
            """,
            """
            set {
                withMutation(keyPath: \\.\(raw: name)) {
                    _\(raw: name) = newValue
                }
            }
            """,
        ]
    }
}

extension TrackedTransientMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try TrackedColumnMacro.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}
