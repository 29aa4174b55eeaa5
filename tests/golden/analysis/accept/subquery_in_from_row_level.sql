-- A row-level subquery in FROM, named by its alias.
SELECT COUNT(*) FROM (SELECT * FROM people WHERE age > 30) AS source
