-- expect: DP108
SELECT * FROM (SELECT dept, COUNT(*) AS n, SUM(age) OVER () AS t FROM people GROUP BY dept) s
