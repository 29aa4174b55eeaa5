SELECT dept, AVG(income) AS mean FROM people GROUP BY GROUPING SETS ((dept), ()) HAVING COUNT(*) > 10
