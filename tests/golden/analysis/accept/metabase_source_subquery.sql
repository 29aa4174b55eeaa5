-- Metabase question: quoted, qualified, renamed columns in a source subquery.
SELECT "source"."dept" AS "dept", COUNT(*) AS "count" FROM (SELECT "people"."dept" AS "dept", "people"."age" AS "age" FROM "people") AS "source" WHERE "source"."age" > 30 GROUP BY "source"."dept" ORDER BY "source"."dept" ASC
