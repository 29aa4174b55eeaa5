-- HAVING filters noisy aggregates; ORDER BY an output alias.
SELECT dept, COUNT(*) AS n FROM people GROUP BY dept HAVING COUNT(*) > 100 ORDER BY n DESC
