-- expect: DP119
SELECT COUNT(*) FROM people LIMIT 1.5
