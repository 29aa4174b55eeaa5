-- expect: DP111
SELECT SUM(income) FROM (SELECT dept FROM people) AS s
