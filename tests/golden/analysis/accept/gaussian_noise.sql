SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian', delta = 1e-7) COUNT(*), SUM(age), AVG(income) FROM people
