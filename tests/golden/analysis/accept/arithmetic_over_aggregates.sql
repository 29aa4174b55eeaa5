-- Arithmetic over aggregates and literals is post-processing of noisy values.
SELECT SUM(income) / COUNT(*) AS mean, 2 * COUNT(*) + 1 FROM people
