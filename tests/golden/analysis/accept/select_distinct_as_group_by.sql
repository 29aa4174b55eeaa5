-- SELECT DISTINCT without aggregates is GROUP BY the columns (keys from the public domain or
-- partition selection); over one aggregated row it is a no-op (DP121 refuses the rest).
SELECT DISTINCT dept FROM people WHERE age > 30
