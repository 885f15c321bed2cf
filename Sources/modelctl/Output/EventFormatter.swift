import TrackedModels

/// Renders change events for `modelctl watch`.
enum EventFormatter {
    /// `rows 42 update (external): count 0 → 1`
    static func text(_ event: ChangeEvent, columns: Set<Int>) -> String {
        let kind = "\(event.table) \(TableFormatter.plain(event.key)) \(event.kind) (\(event.origin))"
        let changes = shown(event, columns).map { "\($0.column) \(literal($0.old)) → \(literal($0.new))" }
        return changes.isEmpty ? kind : kind + ": " + changes.joined(separator: ", ")
    }

    /// `{"table": "rows", "row": 42, "kind": "update", "origin": "external", "columns": {...}}`
    static func json(_ event: ChangeEvent, columns: Set<Int>) -> String {
        let changes = shown(event, columns).map {
            "\(TableFormatter.jsonString($0.column)): {\"old\": \(TableFormatter.jsonValue($0.old)), \"new\": \(TableFormatter.jsonValue($0.new))}"
        }
        return "{\"table\": \(TableFormatter.jsonString(event.table)), \"row\": \(TableFormatter.jsonValue(event.key)), "
            + "\"kind\": \"\(event.kind)\", \"origin\": \"\(event.origin)\", \"columns\": {\(changes.joined(separator: ", "))}}"
    }

    private static func shown(_ event: ChangeEvent, _ columns: Set<Int>) -> [ColumnChange] {
        columns.isEmpty ? event.changes : event.changes.filter { columns.contains($0.index) }
    }

    private static func literal(_ value: SQLValue) -> String {
        value.description
    }
}
