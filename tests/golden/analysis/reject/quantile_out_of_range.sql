-- expect: DP124
SELECT QUANTILE(age, 1.5) FROM people
