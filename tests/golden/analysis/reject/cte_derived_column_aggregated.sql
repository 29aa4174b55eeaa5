-- expect: DP115
WITH m AS (SELECT income / 12 AS monthly FROM people) SELECT SUM(monthly) FROM m
