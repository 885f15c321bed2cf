import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct TrackedMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        TrackedMacro.self,
        TrackedColumnMacro.self,
        TrackedTransientMacro.self,
        TrackedToManyMacro.self,
        MarkerMacro.self,
    ]
}
