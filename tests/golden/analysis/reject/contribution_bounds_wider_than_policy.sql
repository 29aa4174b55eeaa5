-- expect: DP120
-- BigQuery's bounds wider than the policy's [18, 90] for age: sensitivity comes from the policy, so a query may only narrow it.
SELECT dept, SUM(age, contribution_bounds_per_group => (0, 100)) FROM people GROUP BY dept
