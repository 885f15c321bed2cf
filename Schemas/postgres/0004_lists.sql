-- The demo dataset's lists: each row belongs to one list (rows.list_id), or to none.
CREATE TABLE lists (
    id BIGINT PRIMARY KEY,
    title TEXT NOT NULL
);
-- Nullable, so that the rows of databases seeded before lists existed stay valid as they are.
ALTER TABLE rows ADD COLUMN list_id BIGINT REFERENCES lists (id) ON DELETE SET NULL;
-- A list's rows (`list.rows`) read this index instead of the table.
CREATE INDEX rows_by_list ON rows (list_id);
