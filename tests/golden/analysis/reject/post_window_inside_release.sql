-- expect: DP108
SELECT * FROM (SELECT dept, COUNT(*) AS n, SUM(COUNT(*)) OVER () AS t FROM people GROUP BY dept) s
