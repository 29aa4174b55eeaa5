-- expect: DP107
SELECT person_id, COUNT(*) FROM (SELECT person_id AS person_id FROM people) AS s GROUP BY person_id
