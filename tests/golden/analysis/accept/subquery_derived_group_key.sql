-- a row-level subquery's derived column as a key: GROUP BY its expression, domain from the policy
SELECT band, COUNT(*) FROM (SELECT age / 10 AS band FROM people) AS s GROUP BY band
