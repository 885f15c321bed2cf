import Foundation
import Testing
@testable import TrackedModels

/// A member of a club: `email` is unique (without regard to case), and so is `(code, team)`.
@Tracked(table: "members")
final class ClubMember {
    @PrimaryKey var id: Int64
    var email: String
    var name: String
    var code: String?
    var team: Int64?
}

/// Rows another connection's statement deletes to resolve a conflict (SQLite's `REPLACE`, in
/// every way a statement can ask for it) are heard as deletes of exactly those rows; a conflict
/// that deletes nothing (`OR IGNORE`, an UPSERT) is heard as what it did, and nothing more.
/// SQLite fires no delete trigger for such rows unless the writing connection turned on
/// `recursive_triggers`, which the connection here does not.
@MainActor
@Suite(.serialized) struct ConflictReplacementTests {
    /// A file with members 1 to 3 (`m1@club` …, code `c`, teams 1 to 3), a store over it
    /// holding every member's object, a table subscription, and a live list of every member.
    @MainActor struct Fixture {
        let directory: TemporaryDirectory
        let store: ModelStore
        let other: Connection
        let members: [ClubMember]
        let list: FetchedResults<ClubMember>
        let heard: Heard
        let token: FeedToken

        final class Heard {
            var events: [ChangeEvent] = []
        }

        init(extraSQL: String = "") async throws {
            directory = try TemporaryDirectory()
            let path = directory.path("club.sqlite")
            other = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
            try other.execute("""
                CREATE TABLE members (
                    id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE COLLATE NOCASE, name TEXT NOT NULL,
                    code TEXT, team INTEGER, UNIQUE (code, team)
                ) STRICT;
                INSERT INTO members VALUES (1, 'm1@club', 'One', 'c', 1), (2, 'm2@club', 'Two', 'c', 2), (3, 'm3@club', 'Three', 'c', 3);
                \(extraSQL)
                """)
            var configuration = Stores.configuration()
            configuration.wakesOnFileChanges = false
            store = try ModelStore(.file(path), models: [ClubMember.self], configuration: configuration)
            members = try store.fetch(FetchDescriptor<ClubMember>(sortBy: [SortDescriptor(\.id)]))
            list = try store.results(for: FetchDescriptor<ClubMember>(sortBy: [SortDescriptor(\.id)]))
            let heard = Heard()
            self.heard = heard
            token = try store.subscribe(to: .table(ClubMember.self)) { heard.events.append($0) }
        }

        /// Commits `sql` on the other connection and has the store read the log.
        func commit(_ sql: String) async throws {
            try other.execute(sql)
            try await store.refreshExternalChanges()
        }

        /// What the table subscription heard, as `kind key` (and the changed columns of updates).
        var said: [String] {
            heard.events.map { event in
                let columns = event.kind == .update ? " " + event.changes.map(\.column).joined(separator: ",") : ""
                return "\(event.kind) \(event.key)\(columns)"
            }
        }

        /// The members the live list shows, by key, and a fresh fetch's.
        func listed() throws -> (live: [Int64], fresh: [Int64]) {
            (list.map(\.id), try store.fetch(FetchDescriptor<ClubMember>(sortBy: [SortDescriptor(\.id)])).map(\.id))
        }
    }

    @Test(arguments: [
        "INSERT OR REPLACE INTO members VALUES (9, 'M1@CLUB', 'Nine', NULL, NULL)",
        "REPLACE INTO members VALUES (9, 'M1@CLUB', 'Nine', NULL, NULL)",
        "INSERT OR REPLACE INTO members VALUES (9, 'm9@club', 'Nine', 'c', 1)",
    ])
    func anInsertThatReplacesARowByAUniqueColumnIsHeardAsItsDelete(_ sql: String) async throws {
        let fixture = try await Fixture()
        try await fixture.commit(sql)
        #expect(fixture.said == ["delete 1", "insert 9"])
        #expect(!fixture.members[0]._$tracking.isAttached)
        #expect(try fixture.store.find(ClubMember.self, key: 1) == nil)
        let listed = try fixture.listed()
        #expect(listed.live == [2, 3, 9])
        #expect(listed.live == listed.fresh)
        _ = fixture.token
    }

    @Test func anUpdateThatReplacesRowsByUniqueColumnsIsHeardAsTheirDeletes() async throws {
        let fixture = try await Fixture()
        // Row 1 takes row 2's email and row 3's (code, team): both go.
        try await fixture.commit("UPDATE OR REPLACE members SET email = 'M2@club', team = 3 WHERE id = 1")
        #expect(fixture.said.sorted() == ["delete 2", "delete 3", "update 1 email,team"])
        #expect(fixture.members[0].email == "M2@club")
        #expect(!fixture.members[1]._$tracking.isAttached && !fixture.members[2]._$tracking.isAttached)
        let listed = try fixture.listed()
        #expect(listed.live == [1])
        #expect(listed.live == listed.fresh)
    }

    @Test func anUpdateOfAKeyOntoAnotherRowsKeyReplacesThatRow() async throws {
        let fixture = try await Fixture()
        try await fixture.commit("UPDATE OR REPLACE members SET id = 2 WHERE id = 1")
        // Row 1 went; row 2 is another row now (row 1's values), heard as the cells that differ.
        #expect(fixture.said.sorted() == ["delete 1", "update 2 email,name,team"])
        #expect(!fixture.members[0]._$tracking.isAttached && !fixture.members[1]._$tracking.isAttached)
        #expect(try fixture.store.find(ClubMember.self, key: 2)?.email == "m1@club")
        let listed = try fixture.listed()
        #expect(listed.live == [2, 3])
        #expect(listed.live == listed.fresh)
    }

    @Test func aConstraintDeclaredOnConflictReplaceIsHeardOnAPlainInsert() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("club.sqlite")
        let other = try Connection(filename: path, mode: .readWriteCreate, busyTimeout: .seconds(5))
        try other.execute("""
            CREATE TABLE members (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE ON CONFLICT REPLACE, name TEXT NOT NULL, code TEXT, team INTEGER);
            INSERT INTO members VALUES (1, 'm1@club', 'One', NULL, NULL), (2, 'm2@club', 'Two', NULL, NULL);
            """)
        let store = try ModelStore(.file(path), models: [ClubMember.self], configuration: Stores.configuration())
        let first = try #require(try store.find(ClubMember.self, key: 1))
        var heard: [ChangeEvent] = []
        let token = try store.subscribe(to: .membership(ClubMember.self)) { heard.append($0) }
        try other.execute("INSERT INTO members VALUES (5, 'm1@club', 'Five', NULL, NULL)")
        try await store.refreshExternalChanges()
        #expect(heard.map { "\($0.kind) \($0.key)" } == ["delete 1", "insert 5"])
        #expect(!first._$tracking.isAttached)
        token.cancel()
    }

    @Test(arguments: [
        "INSERT OR IGNORE INTO members VALUES (9, 'm1@club', 'Nine', NULL, NULL)",
        "INSERT INTO members VALUES (9, 'm1@club', 'Nine', NULL, NULL) ON CONFLICT DO NOTHING",
        "UPDATE OR IGNORE members SET email = 'm2@club' WHERE id = 1",
        "BEGIN; INSERT OR ROLLBACK INTO members VALUES (9, 'm1@club', 'Nine', NULL, NULL)",
        "INSERT OR REPLACE INTO members VALUES (9, 'm9@club', 'Nine', 'c', NULL)",
    ])
    func aConflictThatDeletesNothingIsHeardAsNothingMore(_ sql: String) async throws {
        let fixture = try await Fixture()
        try? fixture.other.execute(sql)
        try await fixture.store.refreshExternalChanges()
        // (The last: `(code, team)` holds a NULL, which conflicts with nothing.)
        #expect(fixture.said == (sql.contains("'m9@club'") ? ["insert 9"] : []))
        #expect(fixture.members.allSatisfy { $0._$tracking.isAttached })
        let listed = try fixture.listed()
        #expect(listed.live == listed.fresh)
    }

    @Test func anUpsertIsHeardAsTheUpdateItMade() async throws {
        let fixture = try await Fixture()
        try await fixture.commit("INSERT INTO members VALUES (9, 'M1@club', 'Nine', NULL, NULL) ON CONFLICT (email) DO UPDATE SET name = excluded.name")
        #expect(fixture.said == ["update 1 name"])
        #expect(fixture.members[0].name == "Nine")
    }

    /// (Also when the same commit first updated the row: the update does not hide the replace.)
    @Test(arguments: ["", "UPDATE members SET code = 'x' WHERE id = 1;"])
    func aRowReplacedByItsOwnKeyIsAnotherRow(_ before: String) async throws {
        let fixture = try await Fixture()
        fixture.members[0].name = "ours, for the old row"
        try await fixture.commit("BEGIN; \(before) INSERT OR REPLACE INTO members VALUES (1, 'm1@club', 'Theirs', NULL, NULL); COMMIT")
        // The old row went (its object, and the change made to it, with it); the new one shows.
        #expect(!fixture.members[0]._$tracking.isAttached)
        #expect(fixture.store.pendingChanges.isEmpty)
        #expect(try fixture.store.find(ClubMember.self, key: 1)?.name == "Theirs")
        try await fixture.store.flush()
        #expect(try fixture.other.scalar("SELECT name FROM members WHERE id = 1") == "Theirs")
    }

    /// A partial unique index: the rows it holds are matched with its condition (so the probe
    /// uses it), and an update of a column its condition names can replace a row too.
    @Test func aReplaceByAPartialUniqueIndexIsHeardAsItsDelete() async throws {
        let fixture = try await Fixture(extraSQL: """
            UPDATE members SET code = NULL WHERE id = 1; UPDATE members SET name = 'One' WHERE id = 2;
            CREATE UNIQUE INDEX active_names ON members (name) WHERE code IS NULL AND email <> 'it''s (not) here';
            """)
        try await fixture.commit("UPDATE OR REPLACE members SET code = NULL WHERE id = 2")
        #expect(fixture.said.sorted() == ["delete 1", "update 2 code"])
        let listed = try fixture.listed()
        #expect(listed.live == [2, 3])
        #expect(listed.live == listed.fresh)
        #expect(ChangeLog.partialCondition(of: "CREATE UNIQUE INDEX \"a(b\" ON t (\"c)\", lower(d)) where x = ')' ") == "x = ')'")
        #expect(ChangeLog.partialCondition(of: "CREATE UNIQUE INDEX a ON t (c)") == nil)
        // A quote that a combining mark follows is still a quote.
        #expect(ChangeLog.partialCondition(of: "CREATE UNIQUE INDEX a ON t (\"\u{301}c)\") WHERE x > 0") == "x > 0")
    }

    /// A unique index on an expression cannot be matched in a trigger: a write that may
    /// conflict with it is heard as a reset of the table, and the store reloads it.
    @Test func aReplaceByAUniqueExpressionIsHeardAsAReset() async throws {
        let fixture = try await Fixture(extraSQL: "CREATE UNIQUE INDEX members_by_name ON members (lower(name));")
        try await fixture.commit("INSERT OR REPLACE INTO members VALUES (9, 'm9@club', 'ONE', NULL, NULL)")
        #expect(fixture.said.contains("reset NULL"))
        #expect(!fixture.members[0]._$tracking.isAttached)
        let listed = try fixture.listed()
        #expect(listed.live == [2, 3, 9])
        #expect(listed.live == listed.fresh)
    }

    /// The store's own writes of a table with unique columns commit as before, and its
    /// refused ones are refused: the triggers log nothing that outlives a failed statement.
    @Test func theStoresOwnWritesOfUniqueColumnsAreUnchanged() async throws {
        let fixture = try await Fixture()
        try fixture.store.insert(ClubMember(id: 4, email: "m4@club", name: "Four", code: nil, team: nil))
        fixture.members[1].email = "elsewhere@club"
        try await fixture.store.flush()
        try fixture.store.insert(ClubMember(id: 5, email: "M1@club", name: "Five", code: nil, team: nil))
        await #expect(throws: StoreError.self) { try await fixture.store.flush() }
        let file = try fixture.other.scalar("SELECT group_concat(id || email, ' ') FROM (SELECT id, email FROM members ORDER BY id)")
        #expect(file == .text("1m1@club 2elsewhere@club 3m3@club 4m4@club"), "\(file)")
        #expect(try fixture.other.scalar("SELECT count(*) FROM trackedmodels_changes WHERE kind = 4") == 0)
    }
}
