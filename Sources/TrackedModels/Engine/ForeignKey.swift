import Foundation

/// One single-column foreign key of a model's table, as the database declares it (SQLite's
/// `PRAGMA foreign_key_list`, PostgreSQL's `pg_constraint`): what the store needs to know about
/// the database's own `ON DELETE` actions.
struct ForeignKey {
    var childTable: Int
    var column: String
    var target: String
    /// The `ON DELETE` action, upper-cased (`CASCADE`, `SET NULL`, `NO ACTION`, ...).
    var onDelete: String

    /// The `ON DELETE` actions the tables declare for the models' to-one columns. `CASCADE`
    /// deletes, `SET NULL` nullifies, and `RESTRICT` or `NO ACTION` (the default of a
    /// `REFERENCES` clause) refuse while children are left. `SET DEFAULT` is left to the
    /// database alone.
    static func deleteActions(of keys: [ForeignKey], schemas: [TableSchema]) -> [DeleteAction] {
        keys.flatMap { key -> [DeleteAction] in
            let rule: DeleteRule
            switch key.onDelete {
            case "CASCADE": rule = .cascade
            case "SET NULL": rule = .nullify
            case "RESTRICT", "NO ACTION": rule = .deny
            default: return []
            }
            let schema = schemas[key.childTable]
            return schema.relationshipColumns.compactMap { column in
                let targetName = schema.columns[column].reference!.target._$schema.name
                guard schema.columns[column].name.caseInsensitiveCompare(key.column) == .orderedSame,
                      targetName.caseInsensitiveCompare(key.target) == .orderedSame,
                      let targetTable = schemas.firstIndex(where: { $0.name == targetName })
                else { return nil }
                return DeleteAction(childTable: key.childTable, column: column, targetTable: targetTable, rule: rule, declared: "ON DELETE \(key.onDelete)")
            }
        }
    }

    /// The table each to-one column's declared foreign key points at, by table: a link the
    /// commit would write ahead of its target's insert waits for it (``KeyedInserts``).
    static func linkTargets(of keys: [ForeignKey], schemas: [TableSchema]) -> LinkTargets {
        var targets = schemas.map { _ in [Int: Int]() }
        for key in keys {
            let schema = schemas[key.childTable]
            for column in schema.relationshipColumns where schema.columns[column].name.caseInsensitiveCompare(key.column) == .orderedSame {
                let targetName = schema.columns[column].reference!.target._$schema.name
                guard targetName.caseInsensitiveCompare(key.target) == .orderedSame else { continue }
                targets[key.childTable][column] = schemas.firstIndex { $0.name == targetName }
            }
        }
        return LinkTargets(byColumn: targets)
    }

    /// The tables whose rows' deletion makes the database change rows of the models' tables on
    /// its own (`ON DELETE CASCADE`, `SET NULL` or `SET DEFAULT` on any of their columns,
    /// relationships or not): a commit that deletes one reads back what the database did.
    static func actionTargets(of keys: [ForeignKey], schemas: [TableSchema]) -> Set<Int> {
        Set(keys.compactMap { key in
            guard ["CASCADE", "SET NULL", "SET DEFAULT"].contains(key.onDelete) else { return nil }
            return schemas.firstIndex { $0.name.caseInsensitiveCompare(key.target) == .orderedSame }
        })
    }
}
