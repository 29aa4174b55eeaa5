-- GROUP BY an expression with a public domain derived from the policy
SELECT FLOOR(income / 10000) AS n, COUNT(*) FROM people GROUP BY FLOOR(income / 10000)
