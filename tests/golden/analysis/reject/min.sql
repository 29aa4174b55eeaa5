-- expect: DP109
SELECT MIN(age) FROM people
