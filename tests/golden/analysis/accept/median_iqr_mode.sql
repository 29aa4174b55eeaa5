-- Robust aggregates: MEDIAN and IQR of bounded columns by the exponential mechanism, MODE by A_samp.
SELECT MEDIAN(age), IQR(income), MODE(dept) FROM people;
