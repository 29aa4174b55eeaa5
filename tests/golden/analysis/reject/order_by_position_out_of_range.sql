-- expect: DP114
SELECT COUNT(*) FROM people ORDER BY 2
