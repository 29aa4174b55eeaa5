-- GROUP BY a column without a public domain: keys chosen by partition selection (needs delta).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, COUNT(*) AS n
FROM people
GROUP BY region
