-- expect: DP129
SELECT COUNT(*) AS n FROM people GROUP BY CUBE(dept, region, age, income, person_id)
