-- expect: DP120
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (interval_share = 0.95) MEDIAN(income) FROM people
