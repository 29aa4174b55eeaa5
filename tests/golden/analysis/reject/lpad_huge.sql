-- expect: DP125
SELECT COUNT(*) FROM people WHERE lpad(region, 2000000000, 'x') = 'a'
