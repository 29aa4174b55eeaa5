-- expect: DP126
SELECT dept, t.c, COUNT(*) AS n FROM people JOIN (SELECT dept AS k, COUNT(*) AS c FROM people GROUP BY dept) AS t ON people.dept = t.k GROUP BY dept, t.c
