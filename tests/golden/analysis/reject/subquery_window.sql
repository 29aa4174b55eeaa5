-- expect: DP110
SELECT COUNT(*) FROM (SELECT age, row_number() OVER (ORDER BY age) AS r FROM people) AS s WHERE r < 10
