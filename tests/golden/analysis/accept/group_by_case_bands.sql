-- GROUP BY an expression with a public domain derived from the policy
SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END AS band, COUNT(*) FROM people GROUP BY band
