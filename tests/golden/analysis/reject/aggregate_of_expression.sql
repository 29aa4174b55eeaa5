-- expect: DP115
SELECT SUM(income * 2) FROM people
