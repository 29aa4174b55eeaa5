-- expect: DP125
SELECT COUNT(*) FROM people WHERE region LIKE dept
