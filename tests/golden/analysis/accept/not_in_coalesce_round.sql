-- NOT IN lists, COALESCE, ROUND with digits, NOT.
SELECT AVG(age) FROM people WHERE NOT region IN ('east', 'west') AND ROUND(COALESCE(income, 0), 1) >= 100.5
