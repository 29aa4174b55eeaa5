-- expect: DP135
SELECT COUNT(*) FROM people, people AS b
