-- expect: DP143
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian', delta = 0) COUNT(*) FROM people
