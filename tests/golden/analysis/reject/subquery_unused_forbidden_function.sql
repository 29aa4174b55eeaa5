-- expect: DP113
SELECT COUNT(*) FROM (SELECT getenv('HOME') AS home, age FROM people) AS s
