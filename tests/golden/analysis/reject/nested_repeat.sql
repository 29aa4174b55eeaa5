-- expect: DP125
SELECT COUNT(*) FROM people WHERE repeat(repeat(region, 10), 10) = 'x'
