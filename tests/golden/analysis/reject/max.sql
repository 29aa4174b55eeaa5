-- expect: DP109
SELECT dept, MAX(income) FROM people GROUP BY dept
