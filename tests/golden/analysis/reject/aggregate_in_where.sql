-- expect: DP112
SELECT COUNT(*) FROM people WHERE SUM(income) > 1000
