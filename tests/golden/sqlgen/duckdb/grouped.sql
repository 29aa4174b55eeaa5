# Grouped AVG over a public domain: groups outside the declared domain are dropped after aggregation.
SELECT dept, AVG(income) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COALESCE(SUM("__fx_income" - 1024000000), 0) AS __r0, COUNT("__fx_income") AS __r1 FROM "__dpsql_bounded_people" GROUP BY "dept"
;

# Partition selection: person counts per key after keeping max_groups keys per person ($seed is secret).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, COUNT(*) AS n FROM people GROUP BY region;
SELECT "region" AS __k0, COUNT(*) AS __r0, COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) AS __units FROM "__dpsql_keyed_people_c697d2981bf41656" GROUP BY "region" HAVING COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) > 0
;

# Two keys with a filter.
SELECT dept, region, SUM(age) FROM people WHERE income > 1000 GROUP BY dept, region;
SELECT "dept" AS __k0, "region" AS __k1, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END), 0) AS __r0, COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) AS __units FROM "__dpsql_keyed_people_2f4f70f64dde3223" WHERE income > 1000 AND "dept" IN ('engineering', 'sales', 'support', 'operations', 'marketing', 'finance', 'hr', 'legal', 'research', 'product', 'design', 'security') GROUP BY "dept", "region" HAVING COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) > 0
;
