-- The continuous and approximate spellings BI tools type answer with the same DP quantile release.
SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY income), quantile_cont(age, 0.5), approx_quantile(income, 0.25), PERCENTILE_CONT(age, 0.75), quantile_disc(age, 0.1) FROM people
