-- expect: DP126
SELECT dept, COUNT(*) AS n FROM people JOIN (SELECT dept AS k, region, COUNT(*) AS c FROM people GROUP BY dept, region) AS t ON people.dept = t.k GROUP BY dept
