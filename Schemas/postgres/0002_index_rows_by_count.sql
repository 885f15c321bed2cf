-- Queries for the busiest rows (`ORDER BY count DESC`) read this index instead of the table.
CREATE INDEX rows_by_count ON rows (count);
