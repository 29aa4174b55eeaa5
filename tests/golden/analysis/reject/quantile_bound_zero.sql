-- expect: DP124
SELECT QUANTILE(income, 0.9, 0) FROM people
