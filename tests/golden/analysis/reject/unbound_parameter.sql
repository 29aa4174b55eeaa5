-- expect: DP118
SELECT COUNT(*) FROM people WHERE age > ?
