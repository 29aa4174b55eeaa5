-- distinct values of another column than the unit: a count with sensitivity max_rows
SELECT dept, COUNT(DISTINCT region) FROM people GROUP BY dept
