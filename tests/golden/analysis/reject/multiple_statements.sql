-- expect: DP101
SELECT COUNT(*) FROM people; SELECT SUM(income) FROM people
