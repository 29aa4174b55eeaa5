-- expect: DP108
SELECT dept, COUNT(*) AS n, SUM(age) OVER (PARTITION BY dept) AS s FROM people GROUP BY dept
