-- STDDEV from noisy count, centred sum and centred sum of squares (mechanisms/variance.py)
SELECT dept, STDDEV(income), VAR_POP(age), STDDEV_POP(age), VARIANCE(age / 2) FROM people GROUP BY dept
