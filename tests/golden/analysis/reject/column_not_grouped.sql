-- expect: DP105
SELECT region, COUNT(*) FROM people GROUP BY dept
