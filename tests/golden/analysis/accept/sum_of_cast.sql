-- Qrlew's census test: a cast to a float type inside SUM keeps the column's bounds.
SELECT SUM(CAST(income AS REAL) / 10) AS total FROM people WHERE age > 30
