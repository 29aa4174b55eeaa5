-- GROUP BY an expression with a public domain derived from the policy
SELECT age // 10 * 10 AS band, AVG(income) FROM people GROUP BY 1 ORDER BY 1
