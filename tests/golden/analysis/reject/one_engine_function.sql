-- expect: DP113
SELECT COUNT(*) FROM people WHERE gcd(age, 12) = 6
