-- SUM and AVG of the distinct clamped values (Qrlew's SUM(DISTINCT age)): a person adds at most max_rows distinct values.
SELECT dept, SUM(DISTINCT age) AS total, AVG(DISTINCT income) AS mean, COUNT(DISTINCT age) FROM people GROUP BY dept
