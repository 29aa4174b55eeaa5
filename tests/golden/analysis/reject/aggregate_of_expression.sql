-- expect: DP115
SELECT SUM(sqrt(income)) FROM people
