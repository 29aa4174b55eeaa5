-- Per-query epsilon; delta defaults to the session's.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0) AVG(income) AS avg_income FROM people WHERE dept = 'sales'
