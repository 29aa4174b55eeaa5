-- expect: DP141
SELECT income, COUNT(*) FROM people GROUP BY income
