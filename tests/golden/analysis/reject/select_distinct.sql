-- expect: DP121
SELECT DISTINCT dept FROM people
