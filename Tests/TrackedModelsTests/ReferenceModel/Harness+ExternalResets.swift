import PropertyBased
@testable import TrackedModels

/// Another connection's changes that the store hears only as a whole table: rows inserted in
/// bulk on SQLite, the way another store's bulk insert writes them (no log entry per row, one
/// for the table), a `TRUNCATE` followed by inserts on PostgreSQL, a change made while the
/// log's triggers, or the whole log, were dropped, and a change made while the table did not
/// fit its model. The store reloads what it holds and announces a reset.
extension Harness {
    /// Now and then after another commit that deletes a row and inserts it again, heard in the
    /// same poll: that row is another row all the same.
    func externalReset(_ a: UInt64, _ b: UInt64) async throws {
        if a % 4 == 0 { try await externalReplace(a / 4, b / 3) }
        var random = Xoshiro(seed: a ^ (b << 5))
        let rows = (0..<Int(random.next() % 3)).map { _ in
            var values = row(seed: random.next() % 1_000_000)
            values[0] = .integer(insertedKey(seed: random.next() % 1_000_000))
            return values
        }
        let truncates = engine == .postgres
        let listed = rows.map { "(\($0.map(\.describedExactly).joined(separator: ", ")))" }.joined(separator: " ")
        note("other connection: \(truncates ? "TRUNCATE items, then INSERT" : "INSERT in bulk (one log entry for the table)") \(listed)")
        mayReset = true
        let keys = try rows.map { try Int64(sqlValue: $0[0]) }
        let declaration = reference.declaration
        let expected = reference.external(inserting: keys.max()) { file in
            if truncates { file.removeAll() }
            for (key, values) in zip(keys, rows) {
                guard file[key] == nil else { return false }
                file[key] = declaration.stored(values)
            }
            return true
        }
        let insert = "INSERT INTO items (id, title, count, note, score, payload, flag, link_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        let committed = switch other {
        case .sqlite(let connection): (try? Self.insertInBulk(rows, with: insert, on: connection)) != nil
        case .postgres: (try? await other.commit([("TRUNCATE items", [])] + rows.map { (insert, $0) })) != nil
        }
        if committed != expected { throw Divergence(message: "the other connection's rows \(committed ? "committed" : "failed"); the reference expected otherwise") }
    }

    /// Inserts rows as another store's bulk insert does (the table's insert trigger dropped
    /// meanwhile, one log entry for the whole table), all or nothing.
    private static func insertInBulk(_ rows: [[SQLValue]], with insert: String, on connection: Connection) throws {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try ChangeLog.insertingInBulk(into: "items", on: connection) {
                for values in rows { try connection.makeStatement(insert).run(values) }
            }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Another connection drops one of the log's triggers of the table, or the whole log (the
    /// way a tool cleaning up `trackedmodels_*` would; on PostgreSQL also disables the trigger
    /// or replaces its function with one that logs nothing), then updates, inserts or deletes a
    /// row: nothing logs it, and the store must find the log gone, install it again and reset.
    func externalChangeWhileTheLogIsAway(_ a: UInt64, _ b: UInt64) async throws {
        let drops: [String]
        switch engine {
        case .sqlite:
            let kinds = ["delete", "insert", "insertreplaces", "rekey", "update", "updatereplaces"]
            let triggers = kinds.map { "DROP TRIGGER IF EXISTS trackedmodels_items_\($0)_v2" }
            drops = a % 7 == 6
                ? triggers + ["DROP TABLE IF EXISTS trackedmodels_changes", "DROP TABLE IF EXISTS trackedmodels_changes_state"]
                : [triggers[Int(a % 6)]]
        case .postgres:
            drops = [
                ["DROP TRIGGER IF EXISTS trackedmodels_items_v1 ON items"],
                ["DROP TRIGGER IF EXISTS trackedmodels_items_v1_truncate ON items"],
                ["ALTER TABLE items DISABLE TRIGGER trackedmodels_items_v1"],
                ["CREATE OR REPLACE FUNCTION trackedmodels_items_v1() RETURNS trigger LANGUAGE plpgsql AS $f$BEGIN RETURN NULL; END$f$"],
                ["DROP TABLE IF EXISTS trackedmodels_changes, trackedmodels_changes_state, trackedmodels_readers", "DROP FUNCTION IF EXISTS trackedmodels_items_v1 CASCADE"],
            ][Int(a % 7 % 5)]
        }
        note("other connection: \(drops.joined(separator: "; "))")
        guard (try? await other.commit(drops.map { ($0, []) })) != nil else { throw Divergence(message: "the other connection could not drop the log") }
        mayReset = true
        switch b % 3 {
        case 0: try await externalUpdate(a / 7, b / 3)
        case 1: try await externalInsert(a / 7, b / 3)
        default: try await externalDelete(a / 7)
        }
    }

    /// Another connection renames a column of the table (as a migration tool might, for a
    /// while), updates a row meanwhile, and names the column back, the store looking in
    /// between: it reports the difference on `writeErrors`, leaves the table out while it does
    /// not fit its model, and resets it once it does, so that the update shows.
    func externalChangeWhileTheTableIsAltered(_ a: UInt64, _ b: UInt64) async throws {
        guard let store else { return try await externalUpdate(a, b) }
        let renamed = Item.Column.assignable[Int(a % UInt64(Item.Column.assignable.count))]
        let rename = "ALTER TABLE items RENAME COLUMN \"\(renamed)\" TO \"\(renamed)_renamed\""
        note("other connection: \(rename)")
        guard await other.commits(rename, []) else { throw Divergence(message: "the other connection could not rename \(renamed)") }
        let errorsBefore = writeErrorsHeard.count
        try await store.refreshExternalChanges()
        let reported = { self.writeErrorsHeard.dropFirst(errorsBefore).contains { $0.code == .schemaMismatch && $0.differences.contains { $0.column == "\(renamed)" } } }
        await letStreamsCatchUp(until: reported)
        guard reported() else { throw Divergence(message: "column \(renamed) was renamed under the open store, but writeErrors did not say so") }
        mayReset = true
        // An update of another column: the renamed one has another name meanwhile.
        var column = b
        while Item.Column.assignable[Int(column % UInt64(Item.Column.assignable.count))] == renamed { column += 1 }
        try await externalUpdate(a / 8, column)
        note("other connection: the column named \(renamed) again")
        guard await other.commits("ALTER TABLE items RENAME COLUMN \"\(renamed)_renamed\" TO \"\(renamed)\"", []) else {
            throw Divergence(message: "the other connection could not name \(renamed) back")
        }
    }
}
