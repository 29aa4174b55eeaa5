-- expect: DP110
SELECT COUNT(*) FROM people, people AS b
