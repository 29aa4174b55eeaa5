-- COUNT(col) counts non-NULL values; NOT BETWEEN and IS NULL in WHERE.
SELECT COUNT(income) FROM people WHERE age NOT BETWEEN 30 AND 40 OR region IS NULL
