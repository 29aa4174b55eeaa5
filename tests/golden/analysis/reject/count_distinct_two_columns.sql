-- expect: DP116
SELECT COUNT(DISTINCT dept, region) FROM people
