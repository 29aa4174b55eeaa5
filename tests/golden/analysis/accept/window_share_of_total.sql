-- A share of the total and a rank by a noisy count, in the aggregated SELECT itself.
SELECT dept, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS ranked FROM people GROUP BY dept ORDER BY ranked
