-- expect: DP104
SELECT p.* FROM people AS p
