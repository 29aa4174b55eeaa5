-- expect: DP128
SELECT * FROM (SELECT COUNT(*) AS n, SUM(age) AS n FROM people) t
