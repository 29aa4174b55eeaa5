-- expect: DP138
SELECT COUNT(*) FROM people WHERE dept IN (SELECT dept FROM people WHERE age > 60)
