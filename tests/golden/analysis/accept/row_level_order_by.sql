-- Superset's virtual dataset whose saved SQL ends in ORDER BY: without LIMIT it changes nothing, and is dropped.
SELECT dept, COUNT(*) AS n FROM (SELECT * FROM people ORDER BY age) AS virtual_table GROUP BY dept
