-- ORDER BY an alias, LIMIT with OFFSET.
SELECT dept, SUM(income) AS total FROM people GROUP BY dept ORDER BY total DESC LIMIT 3 OFFSET 1
