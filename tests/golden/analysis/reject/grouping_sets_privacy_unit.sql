-- expect: DP107
SELECT person_id, COUNT(*) AS n FROM people GROUP BY ROLLUP(person_id)
