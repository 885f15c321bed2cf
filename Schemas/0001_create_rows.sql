-- The demo dataset: one row per list item, bumped by `modelctl bump`.
-- STRICT, so that a value of the wrong type is an error instead of a silent conversion.
CREATE TABLE rows (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 0
) STRICT;
