-- expect: DP117
SELECT MEDIAN(dept) FROM people
