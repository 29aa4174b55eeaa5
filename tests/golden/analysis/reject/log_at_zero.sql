-- expect: DP115
SELECT SUM(LOG(income)) FROM people
