-- expect: DP117
SELECT SUM(dept) FROM people
