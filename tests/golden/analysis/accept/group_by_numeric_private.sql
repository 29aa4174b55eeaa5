-- GROUP BY a numeric column without a public domain (partition selection).
SELECT age, COUNT(*) FROM people WHERE age BETWEEN 20 AND 29 GROUP BY age ORDER BY age
