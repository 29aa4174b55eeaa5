WITH t AS (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) SELECT dept, n * 2 AS total, SUM(n) OVER () AS people_count, RANK() OVER (ORDER BY n DESC) AS mean FROM t
