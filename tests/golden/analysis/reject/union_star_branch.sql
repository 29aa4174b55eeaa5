-- expect: DP126
SELECT * FROM (SELECT * FROM people) s UNION ALL SELECT * FROM (SELECT dept, COUNT(*) FROM people GROUP BY dept) t
