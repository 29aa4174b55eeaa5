-- expect: DP115
SELECT MEDIAN(age) FILTER (WHERE age > 30) FROM people
