# Grouped AVG over a public domain: groups outside the declared domain are dropped after aggregation.
SELECT dept, AVG(income) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COALESCE(SUM("__fx_income" - 1024000000), 0) AS __r0, COUNT("__fx_income") AS __r1 FROM "__dpsql_bounded_people" GROUP BY "dept"
;

# Partition selection: person counts per key after keeping max_groups keys per person ($seed is secret).
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, COUNT(*) AS n FROM people GROUP BY region;
SELECT "region" AS __k0, COUNT(*) AS __r0, CAST(COUNT_IF("__unit_key") AS BIGINT) AS __units FROM "__dpsql_keyed_people_c697d2981bf41656_g2" GROUP BY "region" HAVING COUNT_IF("__unit_key") > 0
;

# Two keys with a filter.
SELECT dept, region, SUM(age) FROM people WHERE income > 1000 GROUP BY dept, region;
SELECT "dept" AS __k0, "region" AS __k1, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END), 0) AS __r0, CAST(COUNT_IF("__unit_key") AS BIGINT) AS __units FROM "__dpsql_keyed_people_2f4f70f64dde3223_g2" WHERE income > 1000 AND "dept" IN ('engineering', 'sales', 'support', 'operations', 'marketing', 'finance', 'hr', 'legal', 'research', 'product', 'design', 'security') GROUP BY "dept", "region" HAVING COUNT_IF("__unit_key") > 0
;

# GROUP BY a CASE with literal results: the domain is the literals and the ELSE (issue 12 item 4).
SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END AS band, COUNT(*) FROM people GROUP BY band;
SELECT TRY(CAST(CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END AS TEXT)) AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'older' END AS TEXT))
;

# A CASE without ELSE: NULL is a key of the domain too.
SELECT CASE WHEN age < 30 THEN 'young' END AS band, SUM(income) FROM people GROUP BY 1;
SELECT TRY(CAST(CASE WHEN age < 30 THEN 'young' END AS TEXT)) AS __k0, COALESCE(SUM("__fx_income"), 0) AS __r0 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(CASE WHEN age < 30 THEN 'young' END AS TEXT))
;

# Integer arithmetic over a bounded column, by alias: age in [18, 90] gives the decades 10 .. 90.
SELECT age // 10 * 10 AS decade, AVG(income) FROM people GROUP BY decade ORDER BY decade;
SELECT TRY(CAST(age // 10 * 10 AS BIGINT)) AS __k0, COALESCE(SUM("__fx_income" - 1024000000), 0) AS __r0, COUNT("__fx_income") AS __r1 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(age // 10 * 10 AS BIGINT))
;

# FLOOR over a bounded float: every integer of the derived interval [0, 50].
SELECT FLOOR(income / 10000) AS k, COUNT(*) FROM people GROUP BY FLOOR(income / 10000);
SELECT TRY(CAST(FLOOR(income / 10000) AS BIGINT)) AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(FLOOR(income / 10000) AS BIGINT))
;

# A function of a public-domain column: applied to the declared values; the expression repeated in SELECT.
SELECT upper(dept), COUNT(*) FROM people GROUP BY upper(dept) HAVING COUNT(*) > 10;
SELECT TRY(CAST(UPPER(dept) AS TEXT)) AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(UPPER(dept) AS TEXT))
;

# A function of a private-domain column: partition selection, keyed on the column it reads.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) upper(region) AS r, COUNT(*) FROM people GROUP BY r;
SELECT TRY(CAST(UPPER(region) AS TEXT)) AS __k0, COUNT(*) AS __r0, CAST(COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) AS BIGINT) AS __units FROM "__dpsql_keyed_people_c697d2981bf41656_g2" GROUP BY TRY(CAST(UPPER(region) AS TEXT)) HAVING COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) > 0
;

# A derived public key next to a private key: partition selection over the pairs.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, age // 30 AS a, COUNT(*) FROM people GROUP BY 1, 2;
SELECT "region" AS __k0, TRY(CAST(age // 30 AS BIGINT)) AS __k1, COUNT(*) AS __r0, CAST(COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) AS BIGINT) AS __units FROM "__dpsql_keyed_people_f21312a92b7103f7_g2" WHERE TRY(CAST(age // 30 AS BIGINT)) IN (0, 1, 2, 3) GROUP BY "region", TRY(CAST(age // 30 AS BIGINT)) HAVING COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) > 0
;

# More than 10,000 possible keys: partition selection (delta > 0) instead of a public domain.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) FLOOR(income / 10) AS k, COUNT(*) FROM people GROUP BY 1;
SELECT TRY(CAST(FLOOR(income / 10) AS BIGINT)) AS __k0, COUNT(*) AS __r0, CAST(COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) AS BIGINT) AS __units FROM "__dpsql_keyed_people_00cf141f881d4b55_g2" GROUP BY TRY(CAST(FLOOR(income / 10) AS BIGINT)) HAVING COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) > 0
;

# STDDEV and VARIANCE: noisy count, centred sum and centred sum of squares (issue 12 item 8).
SELECT dept, STDDEV(income), VAR_POP(age) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COALESCE(SUM(CAST(LEAST(GREATEST(ROUND(CAST("__fx_income" - 1024000000 AS DOUBLE) * 0.000244140625 * CAST("__fx_income" - 1024000000 AS DOUBLE) * 0.000244140625 / 32), 0), 1953125000) AS BIGINT)), 0) AS __r0, COALESCE(SUM("__fx_income" - 1024000000), 0) AS __r1, COUNT("__fx_income") AS __r2, COALESCE(SUM(CAST(LEAST(GREATEST(ROUND(CAST(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END - 54 AS DOUBLE) * 1 * CAST(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END - 54 AS DOUBLE) * 1 / 9.5367431640625e-07), 0), 1358954496) AS BIGINT)), 0) AS __r3, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END - 54), 0) AS __r4, COUNT(CASE WHEN NOT "age" IS NULL THEN 1 ELSE NULL END) AS __r5 FROM "__dpsql_bounded_people" GROUP BY "dept"
;

# A derived domain holding NULL (CASE without ELSE) next to a private key: the row filter's IN lists NULL, which matches nothing.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-7) region, CASE WHEN age < 30 THEN 'young' END AS band, COUNT(*) FROM people GROUP BY 1, 2;
SELECT "region" AS __k0, TRY(CAST(CASE WHEN age < 30 THEN 'young' END AS TEXT)) AS __k1, COUNT(*) AS __r0, CAST(COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) AS BIGINT) AS __units FROM "__dpsql_keyed_people_f21312a92b7103f7_g2" WHERE TRY(CAST(CASE WHEN age < 30 THEN 'young' END AS TEXT)) IN ('young', NULL) GROUP BY "region", TRY(CAST(CASE WHEN age < 30 THEN 'young' END AS TEXT)) HAVING COUNT(DISTINCT CASE WHEN "__unit_key" THEN "person_id" END) > 0
;

# GROUP BY LOG of listed values: the engine maps each listed value to its listed key (the same DOUBLE on every engine).
SELECT SUM(age) FROM people GROUP BY LOG(CASE WHEN age < 50 THEN 50 ELSE 1 END);
SELECT TRY(CAST(CASE CASE WHEN age < 50 THEN 50 ELSE 1 END WHEN 1 THEN CAST(0.0 AS DOUBLE) WHEN 50 THEN CAST(1.6989700043360187 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS DOUBLE)) AS __k0, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END), 0) AS __r0 FROM "__dpsql_bounded_people" GROUP BY TRY(CAST(CASE CASE WHEN age < 50 THEN 50 ELSE 1 END WHEN 1 THEN CAST(0.0 AS DOUBLE) WHEN 50 THEN CAST(1.6989700043360187 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS DOUBLE))
;

# SUM/AVG(DISTINCT x): SUM(DISTINCT grid value) (centred for AVG) over COUNT(DISTINCT grid value).
SELECT dept, SUM(DISTINCT age), AVG(DISTINCT income) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COALESCE(SUM(DISTINCT CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END), 0) AS __r0, COALESCE(SUM(DISTINCT "__fx_income" - 1024000000), 0) AS __r1, COUNT(DISTINCT "__fx_income") AS __r2 FROM "__dpsql_bounded_people" GROUP BY "dept"
;
