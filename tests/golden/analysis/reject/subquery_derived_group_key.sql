-- expect: DP114
SELECT band, COUNT(*) FROM (SELECT age / 10 AS band FROM people) AS s GROUP BY band
