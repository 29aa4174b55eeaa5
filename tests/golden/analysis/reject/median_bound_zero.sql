-- expect: DP124
SELECT MEDIAN(income, 0) FROM people
