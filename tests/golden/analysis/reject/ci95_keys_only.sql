-- expect: DP145
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 0, ci95 = 0.1) income FROM people GROUP BY income
