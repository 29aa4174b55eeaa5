-- expect: DP124
SELECT QUANTILE(age) FROM people
