-- Quoted schema and table names, with a table alias.
SELECT SUM(income) FROM "public"."people" AS p WHERE p.age > 40
