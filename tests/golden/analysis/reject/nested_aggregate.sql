-- expect: DP112
SELECT SUM(COUNT(*)) FROM people
