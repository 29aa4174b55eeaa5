-- expect: DP142
SELECT COUNT(*) FROM people WHERE CAST(region AS INTEGER) > 3
