SELECT dept, region, COUNT(*) AS n, GROUPING(dept, region) AS total FROM people GROUP BY ROLLUP(dept, region)
