-- expect: DP126
SELECT dept, COUNT(*) AS n FROM people JOIN (SELECT dept AS k, COUNT(*) AS c FROM people GROUP BY dept) AS t ON people.age = t.c GROUP BY dept
