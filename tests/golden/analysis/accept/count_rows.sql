-- Ungrouped COUNT(*): one release, sensitivity max_rows.
SELECT COUNT(*) FROM people
