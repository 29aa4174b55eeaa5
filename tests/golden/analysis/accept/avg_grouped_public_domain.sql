-- GROUP BY a column with a public domain: every dept is released, empty ones too.
SELECT dept, AVG(age) FROM people GROUP BY dept
