-- expect: DP114
SELECT COUNT(*), dept FROM people GROUP BY 1
