-- A quantile's interval share: the value takes 3/4 of its epsilon, the 95% interval the rest (DP120 outside [0.1, 0.9]).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, interval_share = 0.25) dept, MEDIAN(income), IQR(income) FROM people GROUP BY dept
