-- expect: DP110
SELECT COUNT(*) FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) AS s
