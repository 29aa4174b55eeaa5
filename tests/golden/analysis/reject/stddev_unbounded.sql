-- expect: DP106
SELECT STDDEV(person_id) FROM people
