-- expect: DP122
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 0, quantile_mechanism = 'smed') MEDIAN(age) FROM people
