-- The demo dataset on PostgreSQL: one row per list item, bumped by `modelctl bump`.
CREATE TABLE rows (
    id BIGINT PRIMARY KEY,
    title TEXT NOT NULL,
    count BIGINT NOT NULL DEFAULT 0
);
