-- Allowlisted scalar functions in WHERE (LOWER, ABS) and LIKE.
SELECT COUNT(*) FROM people WHERE LOWER(dept) LIKE 'e%' AND ABS(age - 40) < 10
