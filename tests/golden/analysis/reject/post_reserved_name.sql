-- expect: DP126
SELECT * FROM (SELECT COUNT(*) AS n FROM people) t, __dpsql_released_0 r
