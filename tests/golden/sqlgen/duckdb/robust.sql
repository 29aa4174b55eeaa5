# Bounded columns: MEDIAN by the exponential mechanism on age (grid 1); IQR as Q3 - Q1 of two EM
# quartiles (pure epsilon, never Scale); MODE of dept (declared values) by report-noisy-max.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) MEDIAN(age), IQR(income), MODE(dept) FROM people;
SELECT COUNT(*) AS __rows FROM "__dpsql_bounded_people"
-- request 0: SELECT __v, COUNT(*) AS __c FROM (SELECT "age" AS __v FROM "__dpsql_bounded_people" WHERE NOT "age" IS NULL) AS __b GROUP BY __v
-- request 1: SELECT __v, COUNT(*) AS __c FROM (SELECT CAST(ROUND(LEAST(GREATEST("income" / 10, 0), 50000)) AS BIGINT) AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b GROUP BY __v
-- request 2: SELECT "dept" AS __mode, COUNT(*) AS __votes FROM "__dpsql_bounded_people" WHERE "dept" IN ('engineering', 'sales', 'support', 'operations', 'marketing', 'finance', 'hr', 'legal', 'research', 'product', 'design', 'security') GROUP BY "dept"
;

# A proposed bound runs PTR-Laplace (clamped to the bounds); a quantile of bounded income runs the EM on the grid 10.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) MEDIAN(income, 100), QUANTILE(income, 0.9) FROM people;
SELECT COUNT(*) AS __rows FROM "__dpsql_bounded_people"
-- request 0: SELECT COUNT(*) AS __n, RESERVOIR_QUANTILE(__v, [0, 1, 0.25, 0.75, 0.375, 0.625, 0.4375, 0.5625, 0.46875, 0.53125, 0.484375, 0.515625, 0.4921875, 0.5078125, 0.49609375, 0.50390625, 0.498046875, 0.501953125, 0.4990234375, 0.5009765625, 0.49951171875, 0.50048828125, 0.499755859375, 0.500244140625, 0.4998779296875, 0.5001220703125, 0.49993896484375, 0.50006103515625, 0.499969482421875, 0.500030517578125, 0.4999847412109375, 0.5000152587890625], 65536) AS __q FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b
-- request 0 scan: SELECT __below0, LEN(__all0) AS __size0, __below0 + GREATEST(1, $from0 - __below0) AS __first0, LIST_SLICE(__all0, GREATEST(1, $from0 - __below0), $to0 - __below0) AS __win0 FROM (SELECT COALESCE(COUNT_IF(__v < $lo0), 0) AS __below0, LIST_SORT(ARRAY_AGG(__v) FILTER(WHERE ($lo0 IS NULL OR __v >= $lo0) AND ($hi0 IS NULL OR __v <= $hi0))) AS __all0 FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b) AS __w
-- request 0 fallback: SELECT __n, __rk, __v FROM (SELECT __v, ROW_NUMBER() OVER (ORDER BY __v ASC NULLS FIRST) AS __rk, COUNT(*) OVER () AS __n FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b) AS __r WHERE __rk BETWEEN GREATEST(1, (CAST(__n AS INT128) * 1 + 1) // 2) - 428 AND GREATEST(1, (CAST(__n AS INT128) * 1 + 1) // 2) + 428
-- request 1: SELECT __v, COUNT(*) AS __c FROM (SELECT CAST(ROUND(LEAST(GREATEST("income" / 10, 0), 50000)) AS BIGINT) AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b GROUP BY __v
;

# The exponential-mechanism quantile (pure epsilon, never refuses); grouped, delta all to selection.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (quantile_mechanism = 'exponential') region, MEDIAN(income) FROM people GROUP BY region;
SELECT "region" AS __k0, COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) AS __units FROM "__dpsql_keyed_people_c697d2981bf41656" GROUP BY "region" HAVING COUNT(CASE WHEN "__unit_key" THEN 1 ELSE NULL END) > 0
-- request 0: SELECT __k0, __v, COUNT(*) AS __c FROM (SELECT "region" AS __k0, CAST(ROUND(LEAST(GREATEST("income" / 10, 0), 50000)) AS BIGINT) AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b GROUP BY __k0, __v
;

# IQR reuses the COUNT(*) the query already releases as n_hat; G = min(max_rows, 12 keys) = 3.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) dept, COUNT(*), IQR(age) FROM people GROUP BY dept;
SELECT "dept" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people" GROUP BY "dept"
-- request 0: SELECT __k0, __v, COUNT(*) AS __c FROM (SELECT "dept" AS __k0, "age" AS __v FROM "__dpsql_bounded_people" WHERE NOT "age" IS NULL) AS __b GROUP BY __k0, __v
;

# SMed on request: the stable rank-rho value, person-level rank shift s = ceil(3/2) = 2.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, quantile_mechanism = 'smed') MEDIAN(age) FROM people;
SELECT COUNT(*) AS __rows FROM "__dpsql_bounded_people"
-- request 0: SELECT __v, COUNT(*) AS __c FROM (SELECT "age" AS __v FROM "__dpsql_bounded_people" WHERE NOT "age" IS NULL) AS __b GROUP BY __v
;

# A_samp on request (mode_blocks = B); Scale on request (quantile_mechanism = 'smed') with a paid n_hat.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, mode_blocks = 300, quantile_mechanism = 'smed') MODE(dept), IQR(income) FROM people;
SELECT COUNT("__fx_income") AS __r0 FROM "__dpsql_bounded_people"
-- request 0: SELECT __mode, COUNT(*) AS __votes FROM (SELECT __v AS __mode FROM (SELECT __sid, __v, ROW_NUMBER() OVER (PARTITION BY __sid ORDER BY __c DESC, MD5(CONCAT_WS(':', CAST($tie_seed AS TEXT), CAST(__v AS TEXT), CAST(__sid AS TEXT))) ASC NULLS FIRST, __v ASC NULLS FIRST) AS __rk FROM (SELECT ((CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(1 AS TEXT))), 1, 15) AS BIGINT) % 2147483647) * ((("person_id" % 2147483647) + 2147483647) % 2147483647) + (CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(2 AS TEXT))), 1, 15) AS BIGINT) % 2147483647)) % 2147483647 % 300 AS __sid, "dept" AS __v, COUNT(*) AS __c FROM "__dpsql_bounded_people" WHERE NOT "dept" IS NULL GROUP BY ((CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(1 AS TEXT))), 1, 15) AS BIGINT) % 2147483647) * ((("person_id" % 2147483647) + 2147483647) % 2147483647) + (CAST('0x' || SUBSTRING(MD5(CONCAT_WS(':', CAST($mode_seed AS TEXT), CAST(2 AS TEXT))), 1, 15) AS BIGINT) % 2147483647)) % 2147483647 % 300, "dept") AS __c) AS __r WHERE __rk = 1) AS __m GROUP BY __mode
-- request 1: SELECT COUNT(*) AS __n, RESERVOIR_QUANTILE(__v, [0.75, 0, 0.5, 0.125, 0.375, 0.1875, 0.3125, 0.21875, 0.28125, 0.234375, 0.265625, 0.2421875, 0.2578125, 0.24609375, 0.25390625, 0.248046875, 0.251953125, 0.2490234375, 0.2509765625, 0.24951171875, 0.25048828125, 0.249755859375, 0.250244140625, 0.2498779296875, 0.2501220703125, 0.24993896484375, 0.25006103515625, 0.249969482421875, 0.250030517578125, 0.2499847412109375, 0.2500152587890625, 0.25, 1, 0.625, 0.875, 0.6875, 0.8125, 0.71875, 0.78125, 0.734375, 0.765625, 0.7421875, 0.7578125, 0.74609375, 0.75390625, 0.748046875, 0.751953125, 0.7490234375, 0.7509765625, 0.74951171875, 0.75048828125, 0.749755859375, 0.750244140625, 0.7498779296875, 0.7501220703125, 0.74993896484375, 0.75006103515625, 0.749969482421875, 0.750030517578125, 0.7499847412109375, 0.7500152587890625], 65536) AS __q FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b
-- request 1 scan: SELECT __below0, LEN(__all0) AS __size0, __below0 + GREATEST(1, $from0 - __below0) AS __first0, LIST_SLICE(__all0, GREATEST(1, $from0 - __below0), $to0 - __below0) AS __win0, __below1, LEN(__all1) AS __size1, __below1 + GREATEST(1, $from1 - __below1) AS __first1, LIST_SLICE(__all1, GREATEST(1, $from1 - __below1), $to1 - __below1) AS __win1 FROM (SELECT COALESCE(COUNT_IF(__v < $lo0), 0) AS __below0, LIST_SORT(ARRAY_AGG(__v) FILTER(WHERE ($lo0 IS NULL OR __v >= $lo0) AND ($hi0 IS NULL OR __v <= $hi0))) AS __all0, COALESCE(COUNT_IF(__v < $lo1), 0) AS __below1, LIST_SORT(ARRAY_AGG(__v) FILTER(WHERE ($lo1 IS NULL OR __v >= $lo1) AND ($hi1 IS NULL OR __v <= $hi1))) AS __all1 FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b) AS __w
-- request 1 fallback: SELECT __n, __rk, __v FROM (SELECT __v, ROW_NUMBER() OVER (ORDER BY __v ASC NULLS FIRST) AS __rk, COUNT(*) OVER () AS __n FROM (SELECT "income" AS __v FROM "__dpsql_bounded_people" WHERE ISFINITE("income")) AS __b) AS __r WHERE __rk BETWEEN GREATEST(1, (CAST(__n AS INT128) * 1 + 3) // 4) - 1461 AND GREATEST(1, (CAST(__n AS INT128) * 1 + 3) // 4) + 1461 OR __rk BETWEEN GREATEST(1, (CAST(__n AS INT128) * 3 + 3) // 4) - 1461 AND GREATEST(1, (CAST(__n AS INT128) * 3 + 3) // 4) + 1461
;
