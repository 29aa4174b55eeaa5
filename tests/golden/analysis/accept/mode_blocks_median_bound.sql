SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (mode_blocks = 400, median_bound = 50) MODE(region), MEDIAN(income) - AVG(income) AS total FROM people HAVING MEDIAN(income) > 10
