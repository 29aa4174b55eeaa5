-- expect: DP107
SELECT person_id, COUNT(*) FROM people GROUP BY person_id
