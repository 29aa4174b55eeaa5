-- A row-level CTE (a filter) read by the outer query: inlined over the base table.
WITH old AS (SELECT * FROM people WHERE age > 60) SELECT COUNT(*) FROM old
