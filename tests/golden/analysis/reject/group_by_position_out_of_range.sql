-- expect: DP114
SELECT dept, COUNT(*) FROM people GROUP BY 3
