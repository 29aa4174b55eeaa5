-- expect: DP110
SELECT COUNT(*) FROM (SELECT * FROM people WHERE age > 30)
