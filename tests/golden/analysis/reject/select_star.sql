-- expect: DP104
SELECT * FROM people
