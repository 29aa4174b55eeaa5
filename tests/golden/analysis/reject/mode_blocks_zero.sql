-- expect: DP120
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (mode_blocks = 0) MODE(region) FROM people
