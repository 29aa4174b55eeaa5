# MEDIAN by SMed on age (grid 1), person-level rank shift s = ceil(3/2) = 2; IQR by Scale with a
# paid n_hat count (a tenth of its share); MODE by A_samp with B = max(200, 8 (tau + 4 G/eps)).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) MEDIAN(age), IQR(income), MODE(dept) FROM people;
;

# A proposed bound runs PTR-Laplace; a quantile of income runs SMed on the derived grid 500.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) MEDIAN(income, 100), QUANTILE(income, 0.9) FROM people;
;

# The exponential-mechanism quantile (pure epsilon, never refuses); grouped, delta all to selection.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') region, MEDIAN(income) FROM people GROUP BY region;
;

# IQR reuses the COUNT(*) the query already releases as n_hat; G = min(max_rows, 12 keys) = 3.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) dept, COUNT(*), IQR(age) FROM people GROUP BY dept;
;
