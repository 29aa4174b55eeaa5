-- expect: DP106
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') MEDIAN(person_id) FROM people
