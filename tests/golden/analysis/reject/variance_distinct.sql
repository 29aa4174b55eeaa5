-- expect: DP116
SELECT VARIANCE(DISTINCT income) FROM people
