-- expect: DP108
SELECT SUM(income) OVER (PARTITION BY dept) FROM people
