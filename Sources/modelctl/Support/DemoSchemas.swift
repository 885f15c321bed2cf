import TrackedModels

/// The demo migrations, built into modelctl so that it works from any directory.
///
/// They are copies of the files in `Schemas/` (SQLite) and `Schemas/postgres/` (PostgreSQL); a
/// test checks that both stay identical.
enum DemoSchemas {
    /// The set for an engine.
    static func migrations(for dialect: MigrationDialect) -> [Migration] {
        switch dialect {
        case .sqlite: migrations
        case .postgres: postgresMigrations
        }
    }

    static let migrations: [Migration] = [
        Migration(version: 1, name: "create_rows", sql: """
            -- The demo dataset: one row per list item, bumped by `modelctl bump`.
            -- STRICT, so that a value of the wrong type is an error instead of a silent conversion.
            CREATE TABLE rows (
                id INTEGER PRIMARY KEY,
                title TEXT NOT NULL,
                count INTEGER NOT NULL DEFAULT 0
            ) STRICT;

            """),
        Migration(version: 2, name: "index_rows_by_count", sql: """
            -- Queries for the busiest rows (`ORDER BY count DESC`) read this index instead of the table.
            CREATE INDEX rows_by_count ON rows (count);

            """),
        Migration(version: 3, name: "application_id", sql: """
            -- Marks the file as a modelctl demo database ("MODC"), so that modelctl refuses other files
            -- before it writes to them, and other tools can tell what the file is.
            PRAGMA application_id = \(applicationID);

            """),
        Migration(version: 4, name: "lists", sql: """
            -- The demo dataset's lists: each row belongs to one list (rows.list_id), or to none.
            CREATE TABLE lists (
                id INTEGER PRIMARY KEY,
                title TEXT NOT NULL
            ) STRICT;
            -- Nullable, so that the rows of files seeded before lists existed stay valid as they are.
            ALTER TABLE rows ADD COLUMN list_id INTEGER REFERENCES lists (id) ON DELETE SET NULL;
            -- A list's rows (`list.rows`) read this index instead of the table.
            CREATE INDEX rows_by_list ON rows (list_id);

            """),
    ]

    static let postgresMigrations: [Migration] = [
        Migration(version: 1, name: "create_rows", sql: """
            -- The demo dataset on PostgreSQL: one row per list item, bumped by `modelctl bump`.
            CREATE TABLE rows (
                id BIGINT PRIMARY KEY,
                title TEXT NOT NULL,
                count BIGINT NOT NULL DEFAULT 0
            );

            """),
        Migration(version: 2, name: "index_rows_by_count", sql: """
            -- Queries for the busiest rows (`ORDER BY count DESC`) read this index instead of the table.
            CREATE INDEX rows_by_count ON rows (count);

            """),
        Migration(version: 3, name: "application_id", sql: """
            -- Marks the database as a modelctl demo database, as SQLite's application_id marks a file, so
            -- that modelctl refuses other databases' `rows` tables before it writes to them.
            COMMENT ON TABLE rows IS 'modelctl demo dataset';

            """),
        Migration(version: 4, name: "lists", sql: """
            -- The demo dataset's lists: each row belongs to one list (rows.list_id), or to none.
            CREATE TABLE lists (
                id BIGINT PRIMARY KEY,
                title TEXT NOT NULL
            );
            -- Nullable, so that the rows of databases seeded before lists existed stay valid as they are.
            ALTER TABLE rows ADD COLUMN list_id BIGINT REFERENCES lists (id) ON DELETE SET NULL;
            -- A list's rows (`list.rows`) read this index instead of the table.
            CREATE INDEX rows_by_list ON rows (list_id);

            """),
    ]

    /// The demo database's `PRAGMA application_id`: "MODC".
    static let applicationID: Int64 = 1_297_040_451

    /// The comment on a PostgreSQL demo database's `rows` table, which marks it as modelctl's.
    static let postgresMark = "modelctl demo dataset"
}
