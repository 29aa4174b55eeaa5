-- expect: DP116
SELECT SUM(DISTINCT income) FROM people
