-- expect: DP114
SELECT COUNT(*) FROM people GROUP BY power(age, income)
