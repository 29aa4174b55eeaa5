-- expect: DP115
SELECT SUM(sqrt(age - 50)) FROM people
