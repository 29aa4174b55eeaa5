-- expect: DP108
SELECT COUNT(*) FROM people QUALIFY 1 = 1
