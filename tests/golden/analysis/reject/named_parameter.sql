-- expect: DP118
SELECT COUNT(*) FROM people WHERE age > $min_age
