SELECT dept, region, SUM(age) AS total FROM people GROUP BY CUBE(dept, region) ORDER BY total DESC
