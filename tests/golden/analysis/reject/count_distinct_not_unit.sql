-- expect: DP116
SELECT COUNT(DISTINCT dept) FROM people
