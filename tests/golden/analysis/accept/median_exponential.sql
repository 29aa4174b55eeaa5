SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') region, MEDIAN(income) AS mean FROM people GROUP BY region ORDER BY mean DESC
