-- expect: DP125
SELECT COUNT(*) FROM people WHERE contains(region, dept)
