-- expect: DP137
SELECT COUNT(*) FROM people, people AS b WHERE people.person_id = b.person_id
