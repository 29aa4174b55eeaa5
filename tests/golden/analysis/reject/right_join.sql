-- expect: DP135
SELECT COUNT(*) FROM people AS p RIGHT JOIN people AS q ON p.person_id = q.person_id
