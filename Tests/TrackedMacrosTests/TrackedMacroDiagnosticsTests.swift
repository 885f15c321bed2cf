import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite struct TrackedMacroDiagnosticsTests {
    @Test func aStructIsRefused() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            struct Row {
                @PrimaryKey var id: Int64
            }
            """,
            expandedSource: """
            struct Row {
                var id: Int64
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Tracked applies to classes only, not to struct types; declare the model as a 'final class'", line: 1, column: 1),
            ]
        )
    }

    @Test func aToManyWithoutItsInverseOrDefaultIsRefused() {
        assertExpansion(
            """
            @Tracked(table: "lists")
            final class TodoList {
                @PrimaryKey var id: Int64
                @Relationship(deleteRule: .cascade) var rows: [Row]
            }
            """,
            expandedSource: """
            final class TodoList {
                var id: Int64
                @Relationship(deleteRule: .cascade) var rows: [Row]
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "to-many relationship 'rows' needs its inverse, the children's to-one that stores it: @Relationship(inverse: \\Child.parent)", line: 4, column: 5),
                DiagnosticSpec(message: "to-many relationship 'rows' must be a 'var' with the default value '[]': its children are read from the database", line: 4, column: 5),
            ]
        )
    }

    @Test func anActorIsRefused() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            actor Row {
                @PrimaryKey var id: Int64
            }
            """,
            expandedSource: """
            actor Row {
                var id: Int64
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Tracked applies to classes only, not to actor types; declare the model as a 'final class'", line: 1, column: 1),
            ]
        )
    }

    @Test func everyProblemIsReportedAtOnce() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            final class Row {
                var id: Int64
                var title = "untyped"
                var tags: [String]
                let count: Int
            }
            """,
            expandedSource: """
            final class Row {
                var id: Int64
                var title = "untyped"
                var tags: [String]
                let count: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "stored property 'title' needs a type annotation to become a column, such as 'title: Int'", line: 4, column: 9),
                DiagnosticSpec(message: "'tags' has type '[String]', which cannot be stored in a column; use Bool, Int, Int64, Int32, Double, String, Data, Date, UUID, an Optional of one, or a type conforming to ColumnValue, or mark it @Transient", line: 5, column: 15),
                DiagnosticSpec(
                    message: "column 'count' must be declared with 'var' so the store can track it; use 'var', or mark it @Transient",
                    line: 6, column: 5,
                    fixIts: [FixItSpec(message: "Replace 'let' with 'var'")]
                ),
                DiagnosticSpec(message: "'Row' has no primary key; mark one stored property with @PrimaryKey", line: 2, column: 13),
            ]
        )
    }

    @Test func twoPrimaryKeysAreRefused() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            final class Row {
                @PrimaryKey var id: Int64
                @PrimaryKey var code: String
            }
            """,
            expandedSource: """
            final class Row {
                var id: Int64
                var code: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "only one property can be the primary key, but 'id' and 'code' are marked @PrimaryKey; remove @PrimaryKey from all but one", line: 4, column: 5),
            ]
        )
    }

    @Test func anOptionalOfAnUnsupportedTypeIsRefused() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            final class Row {
                @PrimaryKey var id: Int64
                var ratio: Float?
            }
            """,
            expandedSource: """
            final class Row {
                var id: Int64
                var ratio: Float?
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "'ratio' has type 'Float', which cannot be stored in a column; use Bool, Int, Int64, Int32, Double, String, Data, Date, UUID, an Optional of one, or a type conforming to ColumnValue, or mark it @Transient", line: 4, column: 16),
            ]
        )
    }

    @Test func aTransientPropertyNeedsADefault() {
        assertExpansion(
            """
            @Tracked(table: "rows")
            final class Row {
                @PrimaryKey var id: Int64
                @Transient var isSelected: Bool
            }
            """,
            expandedSource: """
            final class Row {
                var id: Int64
                var isSelected: Bool
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "@Transient property 'isSelected' needs a default value, because objects read from the database are made without it", line: 4, column: 5),
            ]
        )
    }
}
