-- expect: DP137
SELECT COUNT(*) FROM people AS a JOIN people AS b ON a.person_id = b.person_id
