-- A proposed bound b selects PTR-Laplace; grouped by a public domain.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) dept, MEDIAN(income, 100) FROM people GROUP BY dept
