-- EXPLAIN over a CTE that renames and filters.
EXPLAIN WITH old AS (SELECT "age" AS "age", dept FROM "main"."people" WHERE age > 60) SELECT dept, AVG(age) AS mean FROM old GROUP BY dept
