-- expect: DP125
SELECT COUNT(*) FROM people WHERE repeat(region, age) = 'x'
