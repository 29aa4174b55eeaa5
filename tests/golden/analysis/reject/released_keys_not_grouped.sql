-- expect: DP126
SELECT COUNT(*) AS n FROM people JOIN (SELECT dept AS k, COUNT(*) AS c FROM people GROUP BY dept ORDER BY c DESC LIMIT 3) AS t ON people.dept = t.k
