-- expect: DP120
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'ptr_laplace') MEDIAN(age) FROM people
