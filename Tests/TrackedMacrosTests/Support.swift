import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import TrackedMacros

/// The macros as the compiler sees them, by their attribute names.
let trackedMacros: [String: MacroSpec] = [
    "Tracked": MacroSpec(type: TrackedMacro.self, conformances: ["TrackedModel", "Observable"]),
    "PrimaryKey": MacroSpec(type: MarkerMacro.self),
    "Transient": MacroSpec(type: MarkerMacro.self),
    "Column": MacroSpec(type: MarkerMacro.self),
    "_TrackedColumn": MacroSpec(type: TrackedColumnMacro.self),
    "_TrackedTransient": MacroSpec(type: TrackedTransientMacro.self),
]

/// Expands `source` and compares the expansion and diagnostics, reporting to Swift Testing.
func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source,
        expandedSource: expandedSource,
        diagnostics: diagnostics,
        macroSpecs: trackedMacros,
        failureHandler: { failure in
            Issue.record("\(failure.message)", sourceLocation: sourceLocation)
        }
    )
}
