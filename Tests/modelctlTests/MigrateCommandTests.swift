import Foundation
import PostgresTestSupport
import Testing

@Suite struct MigrateCommandTests {
    @Test func theBuiltInMigrationsMatchTheSchemasFolder() async throws {
        let workspace = try Workspace()
        try await workspace.modelctl.run("seed", "--rows", "1")
        let verify = try await workspace.modelctl.run("migrate", "verify", "--schemas", ModelCtlProcess.repositorySchemas)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout == "in sync with migrations from \(ModelCtlProcess.repositorySchemas)/: 4 applied, 0 pending\n")
    }

    @Test func statusPlanAndUpTo() async throws {
        let workspace = try Workspace()
        let plan = try await workspace.modelctl.run("migrate", "plan")
        #expect(plan.stdout.contains("-- 0001_create_rows.sql"))
        #expect(plan.stdout.contains("-- 0002_index_rows_by_count.sql"))
        #expect(!FileManager.default.fileExists(atPath: workspace.modelctl.path("model.sqlite")))
        let unknown = try await workspace.modelctl.run("migrate", "plan", "--to", "9")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("there is no migration version 9; use a version from 0 to 4"))
        let builtIn = "using the demo migrations built into modelctl (no ./Schemas folder here; pass --schemas DIR to use another)\n"
        #expect(plan.stdout.hasPrefix("-- " + builtIn))
        let up = try await workspace.modelctl.run("migrate", "up", "--to", "1")
        #expect(up.stdout == builtIn + "applied 0001_create_rows.sql\nnow at version 1\n")
        let status = try await workspace.modelctl.run("migrate", "status")
        #expect(status.stdout.hasPrefix(builtIn + "version 1 of 4"))
        #expect(status.stdout.contains("pending  0002_index_rows_by_count.sql"))
        let rest = try await workspace.modelctl.run("migrate", "up")
        #expect(rest.stdout == builtIn + "applied 0002_index_rows_by_count.sql\napplied 0003_application_id.sql\napplied 0004_lists.sql\nnow at version 4\n")
        #expect(try await workspace.modelctl.run("migrate", "up").stdout == builtIn + "already at version 4\n")
    }

    @Test func aFileSeededBeforeListsMigratesCleanlyAndKeepsWorking() async throws {
        let workspace = try Workspace()
        #expect(try await workspace.modelctl.run("migrate", "up", "--to", "3").status == 0)
        #expect(try await ModelCtlProcess.sqlite3(workspace.modelctl.path("model.sqlite"), "INSERT INTO rows VALUES (7, 'Old row', 2)") == 0)
        let before = try await workspace.modelctl.run("bump", "7")
        #expect(before.status == 78)
        #expect(before.stderr.contains("rows.list_id: column is missing"))
        #expect(try await workspace.modelctl.run("migrate", "up").stdout.hasSuffix("applied 0004_lists.sql\nnow at version 4\n"))
        let bump = try await workspace.modelctl.run("bump", "7")
        #expect(bump.stdout == "3\n", "\(bump.stderr)")
        let row = try await workspace.modelctl.run("query", "--where", "id = 7", "--format", "csv")
        #expect(row.stdout == "id,title,count,list_id\r\n7,Old row,3,\r\n")
    }

    @Test func anEditedAppliedMigrationIsDrift() async throws {
        let workspace = try Workspace()
        let schemas = try workspace.copySchemas()
        try await workspace.modelctl.run("migrate", "up", "--schemas", schemas)
        let file = URL(fileURLWithPath: schemas).appendingPathComponent("0001_create_rows.sql")
        try (try String(contentsOf: file, encoding: .utf8) + "\n-- edited\n").write(to: file, atomically: true, encoding: .utf8)
        let verify = try await workspace.modelctl.run("migrate", "verify", "--schemas", schemas)
        #expect(verify.status == 78)
        #expect(verify.stderr.contains("0001_create_rows.sql was edited after it was applied"))
        let up = try await workspace.modelctl.run("migrate", "up", "--schemas", schemas)
        #expect(up.status == 78)
    }

    @Test func aMissingAppliedMigrationIsDrift() async throws {
        let workspace = try Workspace()
        let schemas = try workspace.copySchemas()
        try await workspace.modelctl.run("migrate", "up", "--schemas", schemas)
        try FileManager.default.removeItem(atPath: schemas + "/0004_lists.sql")
        let verify = try await workspace.modelctl.run("migrate", "verify", "--schemas", schemas)
        #expect(verify.status == 78)
        #expect(verify.stderr.contains("0004_lists.sql is missing"))
    }

    @Test func aFailingMigrationLeavesTheDatabaseAtThePreviousVersion() async throws {
        let workspace = try Workspace()
        let schemas = try workspace.copySchemas()
        try "CREATE TABLE notes (id INTEGER PRIMARY KEY);\nINSERT INTO missing_table VALUES (1);\n"
            .write(toFile: schemas + "/0005_add_notes.sql", atomically: true, encoding: .utf8)
        let up = try await workspace.modelctl.run("migrate", "up", "--schemas", schemas)
        #expect(up.status == 65)
        #expect(up.stderr.contains("0005_add_notes.sql failed at statement `INSERT INTO missing_table VALUES (1);`"))
        #expect(up.stderr.contains("no such table: missing_table"))
        #expect(up.stderr.contains("stays at version 4"))
        let status = try await workspace.modelctl.run("migrate", "status", "--schemas", schemas)
        #expect(status.stdout.hasPrefix("using migrations from \(schemas)/\nversion 4 of 5"))
        let tables = try await workspace.modelctl.run("query", "SELECT name FROM sqlite_master WHERE name = 'notes'", "--format", "csv")
        #expect(tables.stdout == "name\r\n")
    }

    @Test func malformedDuplicateAndGappedSetsAreRefused() async throws {
        let cases: [(file: String, message: String)] = [
            ("3_bad.sql", "is not named NNNN_name.sql"),
            ("0002_again.sql", "share version 2"),
            ("0006_later.sql", "has version 6 but 5 was expected"),
        ]
        for (file, message) in cases {
            let workspace = try Workspace()
            let schemas = try workspace.copySchemas()
            try "SELECT 1;".write(toFile: schemas + "/" + file, atomically: true, encoding: .utf8)
            let up = try await workspace.modelctl.run("migrate", "up", "--schemas", schemas)
            #expect(up.status == 78, "\(file)")
            #expect(up.stderr.contains(message), "\(file): \(up.stderr)")
            #expect(!FileManager.default.fileExists(atPath: workspace.modelctl.path("model.sqlite")))
        }
    }

    @Test func twoProcessesMigratingAtOnceApplyOnce() async throws {
        let workspace = try Workspace()
        let first = try workspace.modelctl.start(["migrate", "up"])
        let second = try workspace.modelctl.start(["migrate", "up"])
        for process in [first, second] {
            #expect(await process.exitStatus() == 0)
        }
        let applied = try await workspace.modelctl.run("query", "SELECT count(*) AS n FROM trackedmodels_migrations", "--format", "csv")
        #expect(applied.stdout == "n\r\n4\r\n")
    }

    @Test func newCreatesTheNextFile() async throws {
        let workspace = try Workspace()
        let schemas = try workspace.copySchemas()
        let new = try await workspace.modelctl.run("migrate", "new", "add_notes", "--schemas", schemas)
        #expect(new.status == 0)
        #expect(new.stdout.hasSuffix("Schemas/0005_add_notes.sql\n"))
        #expect(FileManager.default.fileExists(atPath: schemas + "/0005_add_notes.sql"))
        let bad = try await workspace.modelctl.run("migrate", "new", "Add Notes", "--schemas", schemas)
        #expect(bad.status == 64)
    }

    @Test func aNewMigrationInTheSchemasFolderIsWhatUpApplies() async throws {
        let workspace = try Workspace()
        _ = try workspace.copySchemas()
        try await workspace.modelctl.run("seed", "--rows", "3")
        let new = try await workspace.modelctl.run("migrate", "new", "add_notes")
        #expect(new.status == 0, "\(new.stderr)")
        let file = try #require(new.stdout.split(separator: "\n").first.map(String.init))
        #expect(file.hasSuffix("Schemas/0005_add_notes.sql"))
        try "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\n".write(toFile: file, atomically: true, encoding: .utf8)
        // No --schemas anywhere: ./Schemas is the folder because it exists.
        let plan = try await workspace.modelctl.run("migrate", "plan")
        #expect(plan.stdout.hasPrefix("-- using migrations from Schemas/\n-- 0005_add_notes.sql"))
        let up = try await workspace.modelctl.run("migrate", "up")
        #expect(up.status == 0, "\(up.stderr)")
        #expect(up.stdout == "using migrations from Schemas/\napplied 0005_add_notes.sql\nnow at version 5\n")
        let status = try await workspace.modelctl.run("migrate", "status")
        #expect(status.stdout.hasPrefix("using migrations from Schemas/\nversion 5 of 5"))
        let tables = try await workspace.modelctl.run("query", "SELECT name FROM sqlite_master WHERE name = 'notes'", "--format", "csv")
        #expect(tables.stdout == "name\r\nnotes\r\n")
        #expect(try await workspace.modelctl.run("migrate", "verify").status == 0)
    }

    @Test func modelsThatDoNotMatchTheMigratedSchemaFailToOpen() async throws {
        let workspace = try Workspace()
        let schemas = workspace.modelctl.path("Other")
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try "CREATE TABLE rows (id INTEGER PRIMARY KEY, title TEXT NOT NULL) STRICT;"
            .write(toFile: schemas + "/0001_rows_without_count.sql", atomically: true, encoding: .utf8)
        #expect(try await workspace.modelctl.run("migrate", "up", "--schemas", schemas).status == 0)
        let bump = try await workspace.modelctl.run("bump", "1")
        #expect(bump.status == 78)
        #expect(bump.stderr.contains("rows.count: column is missing"))
    }
}
