-- expect: DP120
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, sigma = 1) COUNT(*) FROM people
