-- expect: DP117
SELECT VARIANCE(region) FROM people
