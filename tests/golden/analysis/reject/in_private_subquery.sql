-- expect: DP138
SELECT COUNT(*) FROM people WHERE person_id IN (SELECT person_id FROM people)
