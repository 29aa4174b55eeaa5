-- Superset virtual dataset (its row limit, here 100).
SELECT dept AS dept, COUNT(*) AS count FROM (SELECT * FROM people) AS virtual_table GROUP BY dept ORDER BY count DESC LIMIT 100
