-- expect: DP125
WITH s AS (SELECT repeat(dept, 100000) AS big, age FROM people) SELECT COUNT(*) FROM s
