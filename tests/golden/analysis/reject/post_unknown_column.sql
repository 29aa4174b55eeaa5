-- expect: DP111
SELECT * FROM (SELECT dept, COUNT(*) AS n FROM people GROUP BY dept) t WHERE income > 3
