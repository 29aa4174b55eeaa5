-- expect: DP114
SELECT COUNT(*) FROM people GROUP BY age / 10
