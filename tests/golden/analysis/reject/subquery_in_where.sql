-- expect: DP110
SELECT COUNT(*) FROM people WHERE age > (SELECT 30)
