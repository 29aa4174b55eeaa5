# Grouped AVG over a public domain: groups outside the declared domain are dropped after aggregation.
SELECT dept, AVG(income) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COALESCE(SUM(CASE WHEN ISFINITE("income") THEN CAST(ROUND(LEAST(GREATEST("income", 0), 500000) * 4096) AS BIGINT) - 1024000000 ELSE NULL END), 0) AS __r0, COUNT(CASE WHEN ISFINITE("income") THEN 1 ELSE NULL END) AS __r1 FROM "__dpsql_bounded_people" GROUP BY "dept"
;

# Partition selection: person counts per key after keeping max_groups keys per person ($seed is secret).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, COUNT(*) AS n FROM people GROUP BY region;
SELECT s.__k0, a.__r0, s.__units FROM (SELECT __k0, COUNT(*) AS __units FROM (SELECT __k0, "person_id" FROM (SELECT __k0, "person_id", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST(__k0 AS TEXT), CAST("person_id" AS TEXT))) ASC NULLS FIRST, __k0 ASC NULLS FIRST, "person_id" ASC NULLS FIRST) AS __rank FROM (SELECT DISTINCT "region" AS __k0, "person_id" FROM "__dpsql_bounded_people") AS pk) AS ranked WHERE __rank <= 2) AS kept GROUP BY __k0) AS s JOIN (SELECT "region" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people" GROUP BY "region") AS a ON s.__k0 IS NOT DISTINCT FROM a.__k0
;

# Two keys with a filter.
SELECT dept, region, SUM(age) FROM people WHERE income > 1000 GROUP BY dept, region;
SELECT s.__k0, s.__k1, a.__r0, s.__units FROM (SELECT __k0, __k1, COUNT(*) AS __units FROM (SELECT __k0, __k1, "person_id" FROM (SELECT __k0, __k1, "person_id", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST(__k0 AS TEXT), CAST(__k1 AS TEXT), CAST("person_id" AS TEXT))) ASC NULLS FIRST, __k0 ASC NULLS FIRST, __k1 ASC NULLS FIRST, "person_id" ASC NULLS FIRST) AS __rank FROM (SELECT DISTINCT "dept" AS __k0, "region" AS __k1, "person_id" FROM "__dpsql_bounded_people" WHERE COALESCE(income > 1000, FALSE) AND "dept" IN ('engineering', 'sales', 'support', 'operations', 'marketing', 'finance', 'hr', 'legal', 'research', 'product', 'design', 'security')) AS pk) AS ranked WHERE __rank <= 2) AS kept GROUP BY __k0, __k1) AS s JOIN (SELECT "dept" AS __k0, "region" AS __k1, COALESCE(SUM(CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT)), 0) AS __r0 FROM "__dpsql_bounded_people" WHERE COALESCE(income > 1000, FALSE) AND "dept" IN ('engineering', 'sales', 'support', 'operations', 'marketing', 'finance', 'hr', 'legal', 'research', 'product', 'design', 'security') GROUP BY "dept", "region") AS a ON s.__k0 IS NOT DISTINCT FROM a.__k0 AND s.__k1 IS NOT DISTINCT FROM a.__k1
;
