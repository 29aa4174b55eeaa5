-- expect: DP115
SELECT SUM(person_id * 2) FROM people
