-- Marks the database as a modelctl demo database, as SQLite's application_id marks a file, so
-- that modelctl refuses other databases' `rows` tables before it writes to them.
COMMENT ON TABLE rows IS 'modelctl demo dataset';
