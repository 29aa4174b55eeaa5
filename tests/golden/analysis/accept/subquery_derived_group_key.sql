-- a row-level subquery's derived column as a key: GROUP BY its expression, domain from the policy
SELECT decade, COUNT(*) FROM (SELECT age / 10 AS decade FROM people) AS source GROUP BY decade
