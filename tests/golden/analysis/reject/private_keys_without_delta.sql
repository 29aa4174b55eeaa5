-- expect: DP122
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 0) region, COUNT(*) FROM people GROUP BY region
