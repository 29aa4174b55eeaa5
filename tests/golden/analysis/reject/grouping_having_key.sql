-- expect: DP129
SELECT dept, COUNT(*) AS n FROM people GROUP BY ROLLUP(dept) HAVING dept = 'hr'
