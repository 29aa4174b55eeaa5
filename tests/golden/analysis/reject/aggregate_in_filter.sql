-- expect: DP112
SELECT COUNT(*) FILTER (WHERE SUM(income) > 10) FROM people
