-- expect: DP106
SELECT SUM(person_id) FROM people
