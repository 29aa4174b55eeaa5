-- Two keys: dept has a public domain, region does not (partition selection over pairs).
SELECT dept, region, COUNT(*) FROM people GROUP BY dept, region
