-- expect: DP111
SELECT SUM(salary) FROM people
