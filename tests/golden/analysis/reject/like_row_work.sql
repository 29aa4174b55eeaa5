-- expect: DP125
SELECT COUNT(*) FROM people WHERE lpad(region, 8192, 'a') LIKE '%____________________________________________________%'
