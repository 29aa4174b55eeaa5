-- expect: DP106
SELECT AVG(person_id) FROM people
