-- FILTER (WHERE ...) on COUNT and SUM, an AVG of arithmetic, and a clamp of an unbounded column.
SELECT dept, COUNT(*) FILTER (WHERE age > 65) AS n, SUM(income) FILTER (WHERE region = 'north') AS total, AVG(income / 12) AS mean, SUM(GREATEST(LEAST(person_id, 100), 0)) AS people_count FROM people GROUP BY dept
