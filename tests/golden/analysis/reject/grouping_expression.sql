-- expect: DP129
SELECT COUNT(*) AS n FROM people GROUP BY ROLLUP(age + 1)
