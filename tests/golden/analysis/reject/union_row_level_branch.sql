-- expect: DP126
SELECT age FROM people UNION ALL SELECT COUNT(*) FROM people
