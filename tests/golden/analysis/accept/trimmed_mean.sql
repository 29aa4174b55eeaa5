-- TRIMMED_MEAN(col, p): the mean between two exponential-mechanism quantiles, then a noisy in-window sum and count
SELECT dept, TRIMMED_MEAN(income, 0.1), AVG(income) FROM people GROUP BY dept
