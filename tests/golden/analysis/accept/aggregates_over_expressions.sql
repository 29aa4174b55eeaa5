-- Tableau's row count, and the counting idioms of BI tools.
SELECT SUM(1) AS n, COUNT(CASE WHEN age > 30 THEN 1 END) AS total, SUM(CASE WHEN dept = 'sales' THEN 1 ELSE 0 END) AS mean FROM people
