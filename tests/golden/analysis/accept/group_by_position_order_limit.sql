-- GROUP BY and ORDER BY positions, LIMIT: ordering and limiting are post-processing.
SELECT dept, COUNT(*) FROM people GROUP BY 1 ORDER BY 2 DESC LIMIT 5
