-- expect: DP124
SELECT TRIMMED_MEAN(income, 0.5) FROM people
