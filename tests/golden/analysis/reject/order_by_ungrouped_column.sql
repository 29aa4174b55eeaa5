-- expect: DP105
SELECT dept, SUM(income) AS total FROM people GROUP BY dept ORDER BY income
