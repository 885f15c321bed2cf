public import SwiftSyntax
public import SwiftSyntaxMacros
import SwiftSyntaxBuilder

/// `@PrimaryKey`, `@Transient` and `@Column(_:)`: markers that `@Tracked` reads. They expand to
/// nothing themselves.
public struct MarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
