-- BigQuery's option names, checked against the policy: max_groups_contributed lowers max_groups (2 in the demo policy) to 1; privacy_unit_column names the unit.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, max_groups_contributed = 1, privacy_unit_column = person_id) region, COUNT(*) AS n FROM people GROUP BY region
