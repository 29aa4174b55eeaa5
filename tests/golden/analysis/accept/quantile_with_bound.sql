-- QUANTILE(col, p, b) proposes a bound b for PTR-Laplace, like MEDIAN(col, b).
SELECT QUANTILE(income, 0.9, 500) FROM people
