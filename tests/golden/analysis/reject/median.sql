-- expect: DP109
SELECT MEDIAN(income) FROM people
