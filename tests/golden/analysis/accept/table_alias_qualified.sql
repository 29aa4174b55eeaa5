-- A table alias, and columns qualified by the alias or the table name.
SELECT COUNT(*) FROM people AS p WHERE p.age > 65 AND people.region <> 'west'
