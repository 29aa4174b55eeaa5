-- expect: DP126
SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t JOIN people p ON p.dept = t.dept
