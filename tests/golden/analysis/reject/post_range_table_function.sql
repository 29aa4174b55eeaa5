-- expect: DP126
SELECT * FROM (SELECT COUNT(*) AS n FROM people) t, range(10) r
