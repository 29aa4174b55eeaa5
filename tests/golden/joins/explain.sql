SELECT s.city, COUNT(*) FROM visits v JOIN sites s ON v.site = s.site GROUP BY s.city;
Scan visits_join_ef4b6a7251a9 (private; privacy unit person_id)
  Scan visits AS v: private, its bounded relation (at most 3 row(s) per person_id)
  Join INNER sites AS s ON v.site = s.site: public table, read exactly; many-to-one (each key matches at most 1 row): the sensitivity is kept
  Joined rows per person: at most 3 x 1 = 3 (bounded again after the join)
  BoundContribution: at most 3 row(s) per person_id (keyed hash, secret seed)
  GroupBy: city (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 3, scale 3, epsilon 1, 95% +-9
  Output city: group key
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 3 row(s), chosen at random (secret seed)
  Note: GROUP BY city: all 2 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±9 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_visits_join_ef4b6a7251a9 := SELECT "v"."person_id" AS "person_id", "v"."site" AS "site", "v"."minutes" AS "minutes", "s"."site" AS "s_site", "s"."city" AS "city" FROM "__dpsql_bounded_visits" AS "v" INNER JOIN "__dpsql_source_sites" AS "s" ON "v"."site" = "s"."site"
  __dpsql_bounded_visits_join_ef4b6a7251a9_heavy := SELECT "person_id" FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3
  __dpsql_bounded_visits_join_ef4b6a7251a9 := SELECT "person_id", "site", "minutes", "s_site", "city", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes", "s_site", "city" FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_join_ef4b6a7251a9_heavy") UNION ALL SELECT "person_id", "site", "minutes", "s_site", "city" FROM (SELECT "person_id", "site", "minutes", "s_site", "city", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("s_site" AS TEXT), CAST("city" AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST, "s_site" ASC NULLS FIRST, "city" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_join_ef4b6a7251a9_heavy")) AS __ranked WHERE __rank <= 3) AS __kept
  SELECT "city" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_visits_join_ef4b6a7251a9" GROUP BY "city"
Bounded relation of visits_join_ef4b6a7251a9: built by the first query that reads it
;

SELECT d.floor, COUNT(*), SUM(d.floor) FROM people p JOIN depts d ON p.dept = d.name GROUP BY d.floor;
Scan people_join_a2abf37f960d (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  GroupBy: floor (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 8, epsilon 0.5, 95% +-24
  Release __r1 = SUM(round(clamp(floor, 1, 4) / 1) - 0): discrete Laplace, sensitivity 16, scale 32, epsilon 0.5, 95% +-96
  Output floor: group key
  Output COUNT(*): from COUNT(*)
  Output SUM("floor"): from SUM("floor")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY floor: all 4 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±24 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
  SUM("floor"): ±96 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_a2abf37f960d := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_a2abf37f960d_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_a2abf37f960d := SELECT "person_id", "age", "dept", "name", "floor" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor" FROM (SELECT "person_id", "age", "dept", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_a2abf37f960d" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy")) AS __ranked WHERE __rank <= 4
  SELECT "floor" AS __k0, COUNT(*) AS __r0, COALESCE(SUM(CASE WHEN NOT "floor" IS NULL THEN CAST(LEAST(GREATEST("floor", 1), 4) AS BIGINT) ELSE NULL END), 0) AS __r1 FROM "__dpsql_bounded_people_join_a2abf37f960d" GROUP BY "floor"
Bounded relation of people_join_a2abf37f960d: built by the first query that reads it
;

SELECT COUNT(*) FROM people p LEFT JOIN depts d ON p.dept = d.name WHERE d.floor IS NULL;
Scan people_join_b459180e8e9b (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join LEFT depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: "floor" IS NULL (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_b459180e8e9b := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "p" LEFT JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_b459180e8e9b_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_b459180e8e9b" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_b459180e8e9b := SELECT "person_id", "age", "dept", "name", "floor" FROM "__dpsql_source_people_join_b459180e8e9b" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b459180e8e9b_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor" FROM (SELECT "person_id", "age", "dept", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_b459180e8e9b" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b459180e8e9b_heavy")) AS __ranked WHERE __rank <= 4
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_b459180e8e9b" WHERE "floor" IS NULL
Bounded relation of people_join_b459180e8e9b: built by the first query that reads it
;

SELECT COUNT(*) FROM people WHERE dept IN (SELECT name FROM depts WHERE floor > 2);
Scan people_join_69225696f65d (private; privacy unit person_id)
  Scan people AS people: private, its bounded relation (at most 2 row(s) per person_id)
  Semi-join people.dept IN (SELECT name FROM depts WHERE floor > 2): public table, read exactly; adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_69225696f65d := SELECT "people"."person_id" AS "person_id", "people"."age" AS "age", "people"."dept" AS "dept", CASE WHEN "people"."dept" IN (SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."floor" > 2 AND NOT "__s0"."name" IS NULL) THEN TRUE WHEN ("people"."dept" IS NULL AND EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."floor" > 2)) OR EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."floor" > 2 AND "__s0"."name" IS NULL) THEN NULL ELSE FALSE END AS "__in0" FROM "__dpsql_bounded_people" AS "people"
  __dpsql_bounded_people_join_69225696f65d_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_69225696f65d" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
  __dpsql_bounded_people_join_69225696f65d := SELECT "person_id", "age", "dept", "__in0" FROM "__dpsql_source_people_join_69225696f65d" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_69225696f65d_heavy") UNION ALL SELECT "person_id", "age", "dept", "__in0" FROM (SELECT "person_id", "age", "dept", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_69225696f65d" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_69225696f65d_heavy")) AS __ranked WHERE __rank <= 2
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_69225696f65d" WHERE __in0
Bounded relation of people_join_69225696f65d: built by the first query that reads it
;

SELECT COUNT(*) FROM people p WHERE p.dept NOT IN (SELECT d.name FROM public.depts AS d);
Scan people_join_971f58be4c67 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Semi-join p.dept IN (SELECT d.name FROM public.depts AS d): public table, read exactly; adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
  Filter: NOT __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_971f58be4c67 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", CASE WHEN "p"."dept" IN (SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE NOT "__s0"."name" IS NULL) THEN TRUE WHEN ("p"."dept" IS NULL AND EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0")) OR EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."name" IS NULL) THEN NULL ELSE FALSE END AS "__in0" FROM "__dpsql_bounded_people" AS "p"
  __dpsql_bounded_people_join_971f58be4c67_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_971f58be4c67" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
  __dpsql_bounded_people_join_971f58be4c67 := SELECT "person_id", "age", "dept", "__in0" FROM "__dpsql_source_people_join_971f58be4c67" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_971f58be4c67_heavy") UNION ALL SELECT "person_id", "age", "dept", "__in0" FROM (SELECT "person_id", "age", "dept", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_971f58be4c67" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_971f58be4c67_heavy")) AS __ranked WHERE __rank <= 2
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_971f58be4c67" WHERE NOT __in0
Bounded relation of people_join_971f58be4c67: built by the first query that reads it
;

SELECT v.site, COUNT(*), AVG(p.age), SUM(v.minutes) FROM people p JOIN visits v ON p.person_id = v.person_id GROUP BY v.site;
Scan people_join_3a34838d34fe (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON p.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  GroupBy: site (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 16, epsilon 0.25, 95% +-48
  Release __r1 = SUM(round(clamp(age, 18, 90) / 1) - 54): discrete Laplace, sensitivity 144, scale 576, epsilon 0.25, 95% +-1726
  Release __r2 = COUNT(age finite): discrete Laplace, sensitivity 4, scale 16, epsilon 0.25, 95% +-48
  Release __r3 = SUM(round(clamp(minutes, 0, 60) / 2.98023e-08) - 0): discrete Laplace, sensitivity 240, scale 960, epsilon 0.25, 95% +-2875.9
  Output site: group key
  Output COUNT(*): from COUNT(*)
  Output AVG("age"): from AVG("age")
  Output SUM("minutes"): from SUM("minutes")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY site: all 2 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 13 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±48 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
  AVG("age"): about ±2125 / n for a group of n rows (±21.25 at n = 100, ±2.125 at n = 1,000, ±0.2125 at n = 10,000); the noisy n (±59) adds to it when n is small; clamped to the bounds
  SUM("minutes"): ±2875.9 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_3a34838d34fe := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id"
  __dpsql_bounded_people_join_3a34838d34fe_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_3a34838d34fe := SELECT "person_id", "age", "dept", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT "site" AS __k0, COUNT(*) AS __r0, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END - 54), 0) AS __r1, COUNT(CASE WHEN NOT "age" IS NULL THEN 1 ELSE NULL END) AS __r2, COALESCE(SUM("__fx_minutes"), 0) AS __r3 FROM "__dpsql_bounded_people_join_3a34838d34fe" GROUP BY "site"
Bounded relation of people_join_3a34838d34fe: built by the first query that reads it
;

SELECT COUNT(DISTINCT person_id) FROM people LEFT JOIN visits USING (person_id) WHERE visits.person_id IS NULL;
Scan people_join_8219927d04e5 (private; privacy unit person_id)
  Scan people AS people: private, its bounded relation (at most 2 row(s) per person_id)
  Join LEFT visits AS visits ON people.person_id = visits.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: "visits_person_id" IS NULL (row-level; an error on a row makes it false)
  Release __r0 = COUNT(DISTINCT person_id): discrete Laplace, sensitivity 1, scale 1, epsilon 1, 95% +-3
  Output COUNT(DISTINCT "person_id"): from COUNT(DISTINCT "person_id")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(DISTINCT "person_id"): ±3 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_8219927d04e5 := SELECT "people"."person_id" AS "person_id", "people"."age" AS "age", "people"."dept" AS "dept", "visits"."person_id" AS "visits_person_id", "visits"."site" AS "site", "visits"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "people" LEFT JOIN "__dpsql_bounded_visits" AS "visits" ON "people"."person_id" = "visits"."person_id"
  __dpsql_bounded_people_join_8219927d04e5_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_8219927d04e5" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_8219927d04e5 := SELECT "person_id", "age", "dept", "visits_person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "visits_person_id", "site", "minutes" FROM "__dpsql_source_people_join_8219927d04e5" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_8219927d04e5_heavy") UNION ALL SELECT "person_id", "age", "dept", "visits_person_id", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "visits_person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("visits_person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "visits_person_id" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_8219927d04e5" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_8219927d04e5_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(DISTINCT "person_id") AS __r0 FROM "__dpsql_bounded_people_join_8219927d04e5" WHERE "visits_person_id" IS NULL
Bounded relation of people_join_8219927d04e5: built by the first query that reads it
;

SELECT s.city, COUNT(*) FROM main.people AS p INNER JOIN main.visits AS v ON p.person_id = v.person_id AND p.dept = v.site JOIN sites s ON v.site = s.site GROUP BY s.city;
Scan people_join_6e292e81dbc0 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON p.person_id = v.person_id AND p.dept = v.site: private, its bounded relation (at most 3 row(s) per person_id)
  Join INNER sites AS s ON v.site = s.site: public table, read exactly; many-to-one (each key matches at most 1 row): the sensitivity is kept
  Joined rows per person: at most 2 x 3 x 1 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  GroupBy: city (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output city: group key
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY city: all 2 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_6e292e81dbc0 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes", "s"."site" AS "s_site", "s"."city" AS "city" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id" AND "p"."dept" = "v"."site" INNER JOIN "__dpsql_source_sites" AS "s" ON "v"."site" = "s"."site"
  __dpsql_bounded_people_join_6e292e81dbc0_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_6e292e81dbc0" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_6e292e81dbc0 := SELECT "person_id", "age", "dept", "site", "minutes", "s_site", "city", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "s_site", "city" FROM "__dpsql_source_people_join_6e292e81dbc0" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_6e292e81dbc0_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes", "s_site", "city" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "s_site", "city", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("s_site" AS TEXT), CAST("city" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST, "s_site" ASC NULLS FIRST, "city" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_6e292e81dbc0" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_6e292e81dbc0_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT "city" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_6e292e81dbc0" GROUP BY "city"
Bounded relation of people_join_6e292e81dbc0: built by the first query that reads it
;

WITH t AS (SELECT * FROM people) SELECT COUNT(*) FROM t JOIN visits v ON t.person_id = v.person_id;
Scan people_join_6d53be48bccc (private; privacy unit person_id)
  Scan people AS t: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON t.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_6d53be48bccc := SELECT "t"."person_id" AS "person_id", "t"."age" AS "age", "t"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "t" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "t"."person_id" = "v"."person_id"
  __dpsql_bounded_people_join_6d53be48bccc_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_6d53be48bccc" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_6d53be48bccc := SELECT "person_id", "age", "dept", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes" FROM "__dpsql_source_people_join_6d53be48bccc" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_6d53be48bccc_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_6d53be48bccc" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_6d53be48bccc_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_6d53be48bccc"
Bounded relation of people_join_6d53be48bccc: built by the first query that reads it
;

SELECT "source"."city" AS "city", COUNT(*) AS "count" FROM (SELECT v.person_id, s.city FROM visits v JOIN sites s ON v.site = s.site WHERE v.minutes > 1) AS "source" GROUP BY "source"."city";
Scan visits_join_ef4b6a7251a9 (private; privacy unit person_id)
  Scan visits AS v: private, its bounded relation (at most 3 row(s) per person_id)
  Join INNER sites AS s ON v.site = s.site: public table, read exactly; many-to-one (each key matches at most 1 row): the sensitivity is kept
  Joined rows per person: at most 3 x 1 = 3 (bounded again after the join)
  BoundContribution: at most 3 row(s) per person_id (keyed hash, secret seed)
  Filter: "minutes" > 1 (row-level; an error on a row makes it false)
  GroupBy: city (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 3, scale 3, epsilon 1, 95% +-9
  Output city: group key
  Output count: from COUNT(*)
  Note: each person_id keeps at most 3 row(s), chosen at random (secret seed)
  Note: GROUP BY city: all 2 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  count: ±9 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_visits_join_ef4b6a7251a9 := SELECT "v"."person_id" AS "person_id", "v"."site" AS "site", "v"."minutes" AS "minutes", "s"."site" AS "s_site", "s"."city" AS "city" FROM "__dpsql_bounded_visits" AS "v" INNER JOIN "__dpsql_source_sites" AS "s" ON "v"."site" = "s"."site"
  __dpsql_bounded_visits_join_ef4b6a7251a9_heavy := SELECT "person_id" FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3
  __dpsql_bounded_visits_join_ef4b6a7251a9 := SELECT "person_id", "site", "minutes", "s_site", "city", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes", "s_site", "city" FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_join_ef4b6a7251a9_heavy") UNION ALL SELECT "person_id", "site", "minutes", "s_site", "city" FROM (SELECT "person_id", "site", "minutes", "s_site", "city", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("s_site" AS TEXT), CAST("city" AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST, "s_site" ASC NULLS FIRST, "city" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits_join_ef4b6a7251a9" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_join_ef4b6a7251a9_heavy")) AS __ranked WHERE __rank <= 3) AS __kept
  SELECT "city" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_visits_join_ef4b6a7251a9" WHERE "minutes" > 1 GROUP BY "city"
Bounded relation of visits_join_ef4b6a7251a9: built by the first query that reads it
;

WITH old AS (SELECT person_id, age * 2 AS twice FROM people WHERE age > 30) SELECT d.floor, COUNT(*) FROM old o JOIN visits v ON o.person_id = v.person_id JOIN depts d ON v.site = d.name WHERE o.twice < 200 GROUP BY d.floor;
Scan people_join_ebbb7c208529 (private; privacy unit person_id)
  Scan people AS o: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON o.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Join INNER depts AS d ON v.site = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 3 x 2 = 12, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: "age" > 30 AND "age" * 2 < 200 (row-level; an error on a row makes it false)
  GroupBy: floor (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output floor: group key
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY floor: all 4 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_ebbb7c208529 := SELECT "o"."person_id" AS "person_id", "o"."age" AS "age", "o"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "o" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "o"."person_id" = "v"."person_id" INNER JOIN "__dpsql_source_depts" AS "d" ON "v"."site" = "d"."name"
  __dpsql_bounded_people_join_ebbb7c208529_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_ebbb7c208529" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_ebbb7c208529 := SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor" FROM "__dpsql_source_people_join_ebbb7c208529" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_ebbb7c208529_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_ebbb7c208529" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_ebbb7c208529_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT "floor" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_ebbb7c208529" WHERE COALESCE(TRY("age" > 30 AND "age" * 2 < 200), FALSE) GROUP BY "floor"
Bounded relation of people_join_ebbb7c208529: built by the first query that reads it
;

SELECT COUNT(*) FROM people p, visits v WHERE p.person_id = v.person_id;
Scan people_join_3a34838d34fe (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON p.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_3a34838d34fe := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id"
  __dpsql_bounded_people_join_3a34838d34fe_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_3a34838d34fe := SELECT "person_id", "age", "dept", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_3a34838d34fe"
Bounded relation of people_join_3a34838d34fe: built by the first query that reads it
;

SELECT COUNT(*) FROM depts d JOIN people p ON p.dept = d.name;
Scan people_join_a2abf37f960d (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_a2abf37f960d := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_a2abf37f960d_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_a2abf37f960d := SELECT "person_id", "age", "dept", "name", "floor" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor" FROM (SELECT "person_id", "age", "dept", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_a2abf37f960d" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy")) AS __ranked WHERE __rank <= 4
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_a2abf37f960d"
Bounded relation of people_join_a2abf37f960d: built by the first query that reads it
;

SELECT COUNT(*) FROM people WHERE person_id IN (SELECT person_id FROM visits);
Scan people_join_b262cda50efc (private; privacy unit person_id)
  Scan people AS people: private, its bounded relation (at most 2 row(s) per person_id)
  Semi-join people.person_id IN (SELECT person_id FROM visits): private, read within each person_id (visits.person_id = people.person_id added) from its bounded relation (at most 3 row(s) per person_id); adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_b262cda50efc := SELECT "people"."person_id" AS "person_id", "people"."age" AS "age", "people"."dept" AS "dept", CASE WHEN "people"."person_id" IN (SELECT "__s0"."person_id" FROM "__dpsql_bounded_visits" AS "__s0" WHERE "__s0"."person_id" = "people"."person_id" AND NOT "__s0"."person_id" IS NULL) THEN TRUE WHEN ("people"."person_id" IS NULL AND EXISTS(SELECT "__s0"."person_id" FROM "__dpsql_bounded_visits" AS "__s0" WHERE "__s0"."person_id" = "people"."person_id")) OR EXISTS(SELECT "__s0"."person_id" FROM "__dpsql_bounded_visits" AS "__s0" WHERE "__s0"."person_id" = "people"."person_id" AND "__s0"."person_id" IS NULL) THEN NULL ELSE FALSE END AS "__in0" FROM "__dpsql_bounded_people" AS "people"
  __dpsql_bounded_people_join_b262cda50efc_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_b262cda50efc" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
  __dpsql_bounded_people_join_b262cda50efc := SELECT "person_id", "age", "dept", "__in0" FROM "__dpsql_source_people_join_b262cda50efc" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b262cda50efc_heavy") UNION ALL SELECT "person_id", "age", "dept", "__in0" FROM (SELECT "person_id", "age", "dept", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_b262cda50efc" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b262cda50efc_heavy")) AS __ranked WHERE __rank <= 2
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_b262cda50efc" WHERE __in0
Bounded relation of people_join_b262cda50efc: built by the first query that reads it
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE p.dept IN (SELECT name FROM depts WHERE name = p.dept);
Scan people_join_25502dc71417 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Semi-join p.dept IN (SELECT name FROM depts WHERE name = p.dept): public table, read exactly; adds no rows
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_25502dc71417 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor", CASE WHEN "p"."dept" IN (SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."name" = "p"."dept" AND NOT "__s0"."name" IS NULL) THEN TRUE WHEN ("p"."dept" IS NULL AND EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."name" = "p"."dept")) OR EXISTS(SELECT "__s0"."name" FROM "__dpsql_source_depts" AS "__s0" WHERE "__s0"."name" = "p"."dept" AND "__s0"."name" IS NULL) THEN NULL ELSE FALSE END AS "__in0" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_25502dc71417_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_25502dc71417" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_25502dc71417 := SELECT "person_id", "age", "dept", "name", "floor", "__in0" FROM "__dpsql_source_people_join_25502dc71417" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_25502dc71417_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor", "__in0" FROM (SELECT "person_id", "age", "dept", "name", "floor", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_25502dc71417" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_25502dc71417_heavy")) AS __ranked WHERE __rank <= 4
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_25502dc71417" WHERE __in0
Bounded relation of people_join_25502dc71417: built by the first query that reads it
;

SELECT COUNT(*) FROM people p JOIN depts d ON p.dept = d.name WHERE EXISTS (SELECT 1 FROM depts);
Scan people_join_b161a0786049 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Semi-join EXISTS (SELECT 1 FROM depts): public table, read exactly; adds no rows
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_b161a0786049 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor", EXISTS(SELECT 1 FROM "__dpsql_source_depts" AS "__s0") AS "__in0" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_b161a0786049_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_b161a0786049" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_b161a0786049 := SELECT "person_id", "age", "dept", "name", "floor", "__in0" FROM "__dpsql_source_people_join_b161a0786049" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b161a0786049_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor", "__in0" FROM (SELECT "person_id", "age", "dept", "name", "floor", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_b161a0786049" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_b161a0786049_heavy")) AS __ranked WHERE __rank <= 4
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_b161a0786049" WHERE __in0
Bounded relation of people_join_b161a0786049: built by the first query that reads it
;

SELECT COUNT(*) FROM people p, visits v WHERE p.person_id = v.person_id AND v.minutes > 3;
Scan people_join_3a34838d34fe (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER visits AS v ON p.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Filter: "minutes" > 3 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_3a34838d34fe := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id"
  __dpsql_bounded_people_join_3a34838d34fe_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_3a34838d34fe := SELECT "person_id", "age", "dept", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_3a34838d34fe" WHERE "minutes" > 3
Bounded relation of people_join_3a34838d34fe: built by the first query that reads it
;

SELECT d.floor, COUNT(*) FROM depts d JOIN people p ON p.dept = d.name GROUP BY d.floor;
Scan people_join_a2abf37f960d (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS d ON p.dept = d.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  GroupBy: floor (public domain, every key released)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output floor: group key
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY floor: all 4 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_a2abf37f960d := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_source_depts" AS "d" ON "p"."dept" = "d"."name"
  __dpsql_bounded_people_join_a2abf37f960d_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_a2abf37f960d := SELECT "person_id", "age", "dept", "name", "floor" FROM "__dpsql_source_people_join_a2abf37f960d" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor" FROM (SELECT "person_id", "age", "dept", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_a2abf37f960d" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_a2abf37f960d_heavy")) AS __ranked WHERE __rank <= 4
  SELECT "floor" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_a2abf37f960d" GROUP BY "floor"
Bounded relation of people_join_a2abf37f960d: built by the first query that reads it
;

SELECT COUNT(*), SUM(o.total) FROM people p JOIN orders o ON o.owner = p.person_id;
Scan people_join_143ee34fff80 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER orders AS o ON p.person_id = o.owner: private, its bounded relation (at most 2 row(s) per person_id (owner))
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 8, epsilon 0.5, 95% +-24
  Release __r1 = SUM(round(clamp(total, 0, 100) / 5.96046e-08) - 0): discrete Laplace, sensitivity 400, scale 800, epsilon 0.5, 95% +-2396.59
  Output COUNT(*): from COUNT(*)
  Output SUM("total"): from SUM("total")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±24 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
  SUM("total"): ±2396.59 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_orders := SELECT "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2) UNION ALL SELECT "owner", "order_id", "total" FROM (SELECT "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2) AS __kept
  __dpsql_source_people_join_143ee34fff80 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "o"."order_id" AS "order_id", "o"."total" AS "total" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_orders" AS "o" ON "p"."person_id" = "o"."owner"
  __dpsql_bounded_people_join_143ee34fff80_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_143ee34fff80" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_143ee34fff80 := SELECT "person_id", "age", "dept", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "person_id", "age", "dept", "order_id", "total" FROM "__dpsql_source_people_join_143ee34fff80" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_143ee34fff80_heavy") UNION ALL SELECT "person_id", "age", "dept", "order_id", "total" FROM (SELECT "person_id", "age", "dept", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_143ee34fff80" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_143ee34fff80_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(*) AS __r0, COALESCE(SUM("__fx_total"), 0) AS __r1 FROM "__dpsql_bounded_people_join_143ee34fff80"
Bounded relation of people_join_143ee34fff80: built by the first query that reads it
;

SELECT COUNT(*) FROM people p LEFT JOIN orders o ON p.person_id = o.owner;
Scan people_join_768e35cca8d9 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join LEFT orders AS o ON p.person_id = o.owner: private, its bounded relation (at most 2 row(s) per person_id (owner))
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_orders := SELECT "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2) UNION ALL SELECT "owner", "order_id", "total" FROM (SELECT "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2) AS __kept
  __dpsql_source_people_join_768e35cca8d9 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "o"."owner" AS "owner", "o"."order_id" AS "order_id", "o"."total" AS "total" FROM "__dpsql_bounded_people" AS "p" LEFT JOIN "__dpsql_bounded_orders" AS "o" ON "p"."person_id" = "o"."owner"
  __dpsql_bounded_people_join_768e35cca8d9_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_768e35cca8d9" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_768e35cca8d9 := SELECT "person_id", "age", "dept", "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "person_id", "age", "dept", "owner", "order_id", "total" FROM "__dpsql_source_people_join_768e35cca8d9" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_768e35cca8d9_heavy") UNION ALL SELECT "person_id", "age", "dept", "owner", "order_id", "total" FROM (SELECT "person_id", "age", "dept", "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "owner" ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_768e35cca8d9" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_768e35cca8d9_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_768e35cca8d9"
Bounded relation of people_join_768e35cca8d9: built by the first query that reads it
;

SELECT SUM(l.qty) FROM orders o JOIN lines l ON l.order_id = o.order_id;
Scan orders_join_9bf11a45bb7a (private; privacy unit owner)
  Scan orders AS o: private, its bounded relation (at most 2 row(s) per person_id (owner))
  Join INNER lines AS l ON o.order_id = l.order_id: private, its bounded relation (at most 3 row(s) per person_id (buyer)); joined on the identifier order, so the join adds o.owner = l.buyer: rows of one person_id only
  Joined rows per person: at most 2 x 3 = 6 (bounded again after the join)
  BoundContribution: at most 6 row(s) per owner (keyed hash, secret seed)
  Release __r0 = SUM(round(clamp(qty, 0, 10) / 1) - 0): discrete Laplace, sensitivity 60, scale 60, epsilon 1, 95% +-180
  Output SUM("qty"): from SUM("qty")
  Note: each owner keeps at most 6 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  SUM("qty"): ±180 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_orders := SELECT "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2) UNION ALL SELECT "owner", "order_id", "total" FROM (SELECT "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2) AS __kept
  __dpsql_bounded_lines := SELECT "buyer", "order_id", "qty", "site" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3) UNION ALL SELECT "buyer", "order_id", "qty", "site" FROM (SELECT "buyer", "order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3
  __dpsql_source_orders_join_9bf11a45bb7a := SELECT "o"."owner" AS "owner", "o"."order_id" AS "order_id", "o"."total" AS "total", "l"."order_id" AS "l_order_id", "l"."qty" AS "qty", "l"."site" AS "site" FROM "__dpsql_bounded_orders" AS "o" INNER JOIN "__dpsql_bounded_lines" AS "l" ON "o"."order_id" = "l"."order_id" AND "o"."owner" = "l"."buyer"
  __dpsql_bounded_orders_join_9bf11a45bb7a_heavy := SELECT "owner" FROM "__dpsql_source_orders_join_9bf11a45bb7a" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 6
  __dpsql_bounded_orders_join_9bf11a45bb7a := SELECT "owner", "order_id", "total", "l_order_id", "qty", "site", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total", "l_order_id", "qty", "site" FROM "__dpsql_source_orders_join_9bf11a45bb7a" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_bounded_orders_join_9bf11a45bb7a_heavy") UNION ALL SELECT "owner", "order_id", "total", "l_order_id", "qty", "site" FROM (SELECT "owner", "order_id", "total", "l_order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("l_order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST, "l_order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders_join_9bf11a45bb7a" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_bounded_orders_join_9bf11a45bb7a_heavy")) AS __ranked WHERE __rank <= 6) AS __kept
  SELECT COALESCE(SUM(CASE WHEN NOT "qty" IS NULL THEN CAST(LEAST(GREATEST("qty", 0), 10) AS BIGINT) ELSE NULL END), 0) AS __r0 FROM "__dpsql_bounded_orders_join_9bf11a45bb7a"
Bounded relation of orders_join_9bf11a45bb7a: built by the first query that reads it
;

SELECT SUM(l.qty) FROM lines l JOIN orders o ON l.order_id = o.order_id JOIN people p ON o.owner = p.person_id WHERE p.age > 30;
Scan lines_join_172010c5a480 (private; privacy unit buyer)
  Scan lines AS l: private, its bounded relation (at most 3 row(s) per person_id (buyer))
  Join INNER orders AS o ON l.order_id = o.order_id: private, its bounded relation (at most 2 row(s) per person_id (owner)); joined on the identifier order, so the join adds l.buyer = o.owner: rows of one person_id only
  Join INNER people AS p ON o.owner = p.person_id: private, its bounded relation (at most 2 row(s) per person_id)
  Joined rows per person: at most 3 x 2 x 2 = 12 (bounded again after the join)
  BoundContribution: at most 12 row(s) per buyer (keyed hash, secret seed)
  Filter: "age" > 30 (row-level; an error on a row makes it false)
  Release __r0 = SUM(round(clamp(qty, 0, 10) / 1) - 0): discrete Laplace, sensitivity 120, scale 120, epsilon 1, 95% +-359
  Output SUM("qty"): from SUM("qty")
  Note: each buyer keeps at most 12 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  SUM("qty"): ±359 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_lines := SELECT "buyer", "order_id", "qty", "site" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3) UNION ALL SELECT "buyer", "order_id", "qty", "site" FROM (SELECT "buyer", "order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3
  __dpsql_bounded_orders := SELECT "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2) UNION ALL SELECT "owner", "order_id", "total" FROM (SELECT "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2) AS __kept
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_lines_join_172010c5a480 := SELECT "l"."buyer" AS "buyer", "l"."order_id" AS "order_id", "l"."qty" AS "qty", "l"."site" AS "site", "o"."order_id" AS "o_order_id", "o"."total" AS "total", "p"."age" AS "age", "p"."dept" AS "dept" FROM "__dpsql_bounded_lines" AS "l" INNER JOIN "__dpsql_bounded_orders" AS "o" ON "l"."order_id" = "o"."order_id" AND "l"."buyer" = "o"."owner" INNER JOIN "__dpsql_bounded_people" AS "p" ON "o"."owner" = "p"."person_id"
  __dpsql_bounded_lines_join_172010c5a480_heavy := SELECT "buyer" FROM "__dpsql_source_lines_join_172010c5a480" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 12
  __dpsql_bounded_lines_join_172010c5a480 := SELECT "buyer", "order_id", "qty", "site", "o_order_id", "total", "age", "dept", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "buyer", "order_id", "qty", "site", "o_order_id", "total", "age", "dept" FROM "__dpsql_source_lines_join_172010c5a480" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_172010c5a480_heavy") UNION ALL SELECT "buyer", "order_id", "qty", "site", "o_order_id", "total", "age", "dept" FROM (SELECT "buyer", "order_id", "qty", "site", "o_order_id", "total", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT), CAST("o_order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST, "o_order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines_join_172010c5a480" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_172010c5a480_heavy")) AS __ranked WHERE __rank <= 12) AS __kept
  SELECT COALESCE(SUM(CASE WHEN NOT "qty" IS NULL THEN CAST(LEAST(GREATEST("qty", 0), 10) AS BIGINT) ELSE NULL END), 0) AS __r0 FROM "__dpsql_bounded_lines_join_172010c5a480" WHERE "age" > 30
Bounded relation of lines_join_172010c5a480: built by the first query that reads it
;

SELECT COUNT(*) FROM lines, sites WHERE (lines.site = sites.site AND sites.city = 'Oslo') OR (lines.site = sites.site AND lines.qty > 5);
Scan lines_join_8277ad5c00c9 (private; privacy unit buyer)
  Scan lines AS lines: private, its bounded relation (at most 3 row(s) per person_id (buyer))
  Join INNER sites AS sites ON lines.site = sites.site: public table, read exactly; many-to-one (each key matches at most 1 row): the sensitivity is kept
  Joined rows per person: at most 3 x 1 = 3 (bounded again after the join)
  BoundContribution: at most 3 row(s) per buyer (keyed hash, secret seed)
  Filter: ("site" = "sites_site" AND "city" = 'Oslo') OR ("site" = "sites_site" AND "qty" > 5) (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 3, scale 3, epsilon 1, 95% +-9
  Output COUNT(*): from COUNT(*)
  Note: each buyer keeps at most 3 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±9 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_lines := SELECT "buyer", "order_id", "qty", "site" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3) UNION ALL SELECT "buyer", "order_id", "qty", "site" FROM (SELECT "buyer", "order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3
  __dpsql_source_lines_join_8277ad5c00c9 := SELECT "lines"."buyer" AS "buyer", "lines"."order_id" AS "order_id", "lines"."qty" AS "qty", "lines"."site" AS "site", "sites"."site" AS "sites_site", "sites"."city" AS "city" FROM "__dpsql_bounded_lines" AS "lines" INNER JOIN "__dpsql_source_sites" AS "sites" ON "lines"."site" = "sites"."site"
  __dpsql_bounded_lines_join_8277ad5c00c9_heavy := SELECT "buyer" FROM "__dpsql_source_lines_join_8277ad5c00c9" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3
  __dpsql_bounded_lines_join_8277ad5c00c9 := SELECT "buyer", "order_id", "qty", "site", "sites_site", "city" FROM "__dpsql_source_lines_join_8277ad5c00c9" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_8277ad5c00c9_heavy") UNION ALL SELECT "buyer", "order_id", "qty", "site", "sites_site", "city" FROM (SELECT "buyer", "order_id", "qty", "site", "sites_site", "city", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT), CAST("sites_site" AS TEXT), CAST("city" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST, "sites_site" ASC NULLS FIRST, "city" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines_join_8277ad5c00c9" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_8277ad5c00c9_heavy")) AS __ranked WHERE __rank <= 3
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_lines_join_8277ad5c00c9" WHERE ("site" = "sites_site" AND "city" = 'Oslo') OR ("site" = "sites_site" AND "qty" > 5)
Bounded relation of lines_join_8277ad5c00c9: built by the first query that reads it
;

SELECT COUNT(*) FROM orders o WHERE EXISTS (SELECT 1 FROM lines l WHERE l.order_id = o.order_id AND l.qty > 5);
Scan orders_join_505e64b416b2 (private; privacy unit owner)
  Scan orders AS o: private, its bounded relation (at most 2 row(s) per person_id (owner))
  Semi-join EXISTS (SELECT 1 FROM lines AS l WHERE l.order_id = o.order_id AND l.qty > 5): private, read within each person_id (lines.buyer = o.owner added) from its bounded relation (at most 3 row(s) per person_id (buyer)); adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per owner (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each owner keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_orders := SELECT "owner", "order_id", "total", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2) UNION ALL SELECT "owner", "order_id", "total" FROM (SELECT "owner", "order_id", "total", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_source_orders" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2) AS __kept
  __dpsql_bounded_lines := SELECT "buyer", "order_id", "qty", "site" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3) UNION ALL SELECT "buyer", "order_id", "qty", "site" FROM (SELECT "buyer", "order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3
  __dpsql_source_orders_join_505e64b416b2 := SELECT "o"."owner" AS "owner", "o"."order_id" AS "order_id", "o"."total" AS "total", EXISTS(SELECT 1 FROM "__dpsql_bounded_lines" AS "__s0" WHERE ("__s0"."order_id" = "o"."order_id" AND "__s0"."qty" > 5) AND "__s0"."buyer" = "o"."owner") AS "__in0" FROM "__dpsql_bounded_orders" AS "o"
  __dpsql_bounded_orders_join_505e64b416b2_heavy := SELECT "owner" FROM "__dpsql_source_orders_join_505e64b416b2" WHERE NOT "owner" IS NULL GROUP BY "owner" HAVING COUNT(*) > 2
  __dpsql_bounded_orders_join_505e64b416b2 := SELECT "owner", "order_id", "total", "__in0", CASE WHEN ISFINITE("total") THEN CAST(ROUND(LEAST(GREATEST("total", 0), 100) * 16777216) AS BIGINT) ELSE NULL END AS "__fx_total" FROM (SELECT "owner", "order_id", "total", "__in0" FROM "__dpsql_source_orders_join_505e64b416b2" WHERE NOT "owner" IS NULL AND NOT "owner" IN (SELECT "owner" FROM "__dpsql_bounded_orders_join_505e64b416b2_heavy") UNION ALL SELECT "owner", "order_id", "total", "__in0" FROM (SELECT "owner", "order_id", "total", "__in0", ROW_NUMBER() OVER (PARTITION BY "owner" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("owner" AS TEXT), CAST("order_id" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("total" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "total" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_orders_join_505e64b416b2" WHERE "owner" IN (SELECT "owner" FROM "__dpsql_bounded_orders_join_505e64b416b2_heavy")) AS __ranked WHERE __rank <= 2) AS __kept
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_orders_join_505e64b416b2" WHERE __in0
Bounded relation of orders_join_505e64b416b2: built by the first query that reads it
;

SELECT COUNT(*) FROM people p WHERE NOT EXISTS (SELECT * FROM visits v WHERE v.person_id = p.person_id);
Scan people_join_e62fe37657f8 (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Semi-join EXISTS (SELECT * FROM visits AS v WHERE v.person_id = p.person_id): private, read within each person_id (correlated on the unit) from its bounded relation (at most 3 row(s) per person_id); adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
  Filter: NOT __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_e62fe37657f8 := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", EXISTS(SELECT 1 FROM "__dpsql_bounded_visits" AS "__s0" WHERE "__s0"."person_id" = "p"."person_id") AS "__in0" FROM "__dpsql_bounded_people" AS "p"
  __dpsql_bounded_people_join_e62fe37657f8_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_e62fe37657f8" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
  __dpsql_bounded_people_join_e62fe37657f8 := SELECT "person_id", "age", "dept", "__in0" FROM "__dpsql_source_people_join_e62fe37657f8" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_e62fe37657f8_heavy") UNION ALL SELECT "person_id", "age", "dept", "__in0" FROM (SELECT "person_id", "age", "dept", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_e62fe37657f8" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_e62fe37657f8_heavy")) AS __ranked WHERE __rank <= 2
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_e62fe37657f8" WHERE NOT __in0
Bounded relation of people_join_e62fe37657f8: built by the first query that reads it
;

SELECT COUNT(*) FROM lines l1 WHERE EXISTS (SELECT 1 FROM lines l2 WHERE l2.order_id = l1.order_id AND l2.site <> l1.site);
Scan lines_join_2550c063eee2 (private; privacy unit buyer)
  Scan lines AS l1: private, its bounded relation (at most 3 row(s) per person_id (buyer))
  Semi-join EXISTS (SELECT 1 FROM lines AS l2 WHERE l2.order_id = l1.order_id AND l2.site <> l1.site): private, read within each person_id (lines.buyer = l1.buyer added) from its bounded relation (at most 3 row(s) per person_id (buyer)); adds no rows
  Joined rows per person: at most 3 = 3 (bounded again after the join)
  BoundContribution: at most 3 row(s) per buyer (keyed hash, secret seed)
  Filter: __in0 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 3, scale 3, epsilon 1, 95% +-9
  Output COUNT(*): from COUNT(*)
  Note: each buyer keeps at most 3 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±9 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_lines := SELECT "buyer", "order_id", "qty", "site" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3) UNION ALL SELECT "buyer", "order_id", "qty", "site" FROM (SELECT "buyer", "order_id", "qty", "site", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_source_lines" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3
  __dpsql_source_lines_join_2550c063eee2 := SELECT "l1"."buyer" AS "buyer", "l1"."order_id" AS "order_id", "l1"."qty" AS "qty", "l1"."site" AS "site", EXISTS(SELECT 1 FROM "__dpsql_bounded_lines" AS "__s0" WHERE ("__s0"."order_id" = "l1"."order_id" AND "__s0"."site" <> "l1"."site") AND "__s0"."buyer" = "l1"."buyer") AS "__in0" FROM "__dpsql_bounded_lines" AS "l1"
  __dpsql_bounded_lines_join_2550c063eee2_heavy := SELECT "buyer" FROM "__dpsql_source_lines_join_2550c063eee2" WHERE NOT "buyer" IS NULL GROUP BY "buyer" HAVING COUNT(*) > 3
  __dpsql_bounded_lines_join_2550c063eee2 := SELECT "buyer", "order_id", "qty", "site", "__in0" FROM "__dpsql_source_lines_join_2550c063eee2" WHERE NOT "buyer" IS NULL AND NOT "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_2550c063eee2_heavy") UNION ALL SELECT "buyer", "order_id", "qty", "site", "__in0" FROM (SELECT "buyer", "order_id", "qty", "site", "__in0", ROW_NUMBER() OVER (PARTITION BY "buyer" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("buyer" AS TEXT), CAST("order_id" AS TEXT), CAST("qty" AS TEXT), CAST("site" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "order_id" ASC NULLS FIRST, "qty" ASC NULLS FIRST, "site" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_lines_join_2550c063eee2" WHERE "buyer" IN (SELECT "buyer" FROM "__dpsql_bounded_lines_join_2550c063eee2_heavy")) AS __ranked WHERE __rank <= 3
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_lines_join_2550c063eee2" WHERE __in0
Bounded relation of lines_join_2550c063eee2: built by the first query that reads it
;

SELECT "t1"."floor", SUM("t1"."age") AS "a0" FROM (SELECT "$Outer"."age", "$Inner"."floor" FROM ((SELECT * FROM "people" AS "$Table") AS "$Outer" INNER JOIN (SELECT * FROM "depts" AS "$Table") AS "$Inner" ON ("$Outer"."dept" = "$Inner"."name"))) AS "t1" GROUP BY "t1"."floor";
Scan people_join_9d276587023f (private; privacy unit person_id)
  Scan people AS $outer: private, its bounded relation (at most 2 row(s) per person_id)
  Join INNER depts AS $inner ON $outer.dept = $inner.name: public table, read exactly; one-to-many (a key matches up to 2 rows): each person's row count is multiplied by 2
  Joined rows per person: at most 2 x 2 = 4 (bounded again after the join)
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  GroupBy: floor (public domain, every key released)
  Release __r0 = SUM(round(clamp(age, 18, 90) / 1) - 0): discrete Laplace, sensitivity 360, scale 360, epsilon 1, 95% +-1078
  Output floor: group key
  Output a0: from SUM("age")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
  Note: GROUP BY floor: all 4 public keys released, empty ones too
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  a0: ±1078 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_source_people_join_9d276587023f := SELECT "$outer"."person_id" AS "person_id", "$outer"."age" AS "age", "$outer"."dept" AS "dept", "$inner"."name" AS "name", "$inner"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "$outer" INNER JOIN "__dpsql_source_depts" AS "$inner" ON "$outer"."dept" = "$inner"."name"
  __dpsql_bounded_people_join_9d276587023f_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_9d276587023f" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_9d276587023f := SELECT "person_id", "age", "dept", "name", "floor" FROM "__dpsql_source_people_join_9d276587023f" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_9d276587023f_heavy") UNION ALL SELECT "person_id", "age", "dept", "name", "floor" FROM (SELECT "person_id", "age", "dept", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_9d276587023f" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_9d276587023f_heavy")) AS __ranked WHERE __rank <= 4
  SELECT "floor" AS __k0, COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END), 0) AS __r0 FROM "__dpsql_bounded_people_join_9d276587023f" GROUP BY "floor"
Bounded relation of people_join_9d276587023f: built by the first query that reads it
;

SELECT s.city, t.n FROM sites s LEFT JOIN (SELECT site, COUNT(*) AS n FROM visits GROUP BY site) t ON s.site = t.site ORDER BY s.city;
Post-processing over released results (outer query): 1 release(s), each computed and noised first; the outer query then reads the released rows and public tables only, in a separate database without private tables, at no extra cost
Release 1 of 1: __dpsql_released_0 (subquery t)
  Query: SELECT site, COUNT(*) AS n FROM visits GROUP BY site
  Scan visits (private; privacy unit person_id)
    BoundContribution: at most 3 row(s) per person_id (keyed hash, secret seed)
    GroupBy: site (public domain, every key released)
    Release __r0 = COUNT(*): discrete Laplace, sensitivity 3, scale 3, epsilon 1, 95% +-9
    Output site: group key
    Output n: from COUNT(*)
    Note: each person_id keeps at most 3 row(s), chosen at random (secret seed)
    Note: GROUP BY site: all 2 public keys released, empty ones too
  Cost: epsilon 1, delta 0
  Expected 95% intervals (public, before any data is read):
    n: ±9 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
  Engine SQL:
    __dpsql_bounded_visits_heavy := SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3
    __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_heavy") UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_heavy")) AS __ranked WHERE __rank <= 3) AS __kept
    SELECT "site" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_visits" GROUP BY "site"
Public table sites as __dpsql_public_0: read exactly (public rows, no cost, at most 100,000 rows), beside the released rows
Outer query (released rows and public rows only): SELECT s.city, t.n FROM __dpsql_public_0 AS s LEFT JOIN (SELECT __c0 AS "site", __c1 AS "n" FROM __dpsql_released_0) AS t ON s.site = t.site ORDER BY s.city
Intervals: a column the outer query selects as released keeps each cell's 95% interval; a derived column (arithmetic, aggregates or windows over released values) has none
Note: the public table sites is read exactly (public rows, no cost) and joined with the released rows in the post-processing database
Cost: epsilon 1, delta 0
;

SELECT COUNT(v.site) FROM people p LEFT JOIN visits v ON p.person_id = v.person_id AND v.site NOT LIKE '%sou%';
Scan people_join_38c9e41289fe (private; privacy unit person_id)
  Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
  Join LEFT visits AS v ON p.person_id = v.person_id AND v.site NOT LIKE '%sou%' (a filter on v's rows before the join): private, its bounded relation (at most 3 row(s) per person_id)
  Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
  BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
  Release __r0 = COUNT(site): discrete Laplace, sensitivity 4, scale 4, epsilon 1, 95% +-12
  Output COUNT("site"): from COUNT("site")
  Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT("site"): ±12 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_38c9e41289fe := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."person_id" AS "v_person_id", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "p" LEFT JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id" AND "v"."site" NOT LIKE '%sou%'
  __dpsql_bounded_people_join_38c9e41289fe_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_38c9e41289fe" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_38c9e41289fe := SELECT "person_id", "age", "dept", "v_person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "v_person_id", "site", "minutes" FROM "__dpsql_source_people_join_38c9e41289fe" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_38c9e41289fe_heavy") UNION ALL SELECT "person_id", "age", "dept", "v_person_id", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "v_person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("v_person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "v_person_id" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_38c9e41289fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_38c9e41289fe_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT COUNT("site") AS __r0 FROM "__dpsql_bounded_people_join_38c9e41289fe"
Bounded relation of people_join_38c9e41289fe: built by the first query that reads it
;

SELECT COUNT(*) FROM people WHERE age > (SELECT AVG(floor) * 10 FROM depts);
Post-processing over released results (scalar subquery): 1 release(s), each computed and noised first; the outer query then reads the released rows only, in a separate database without private tables, at no extra cost
Release 1 of 1: __dpsql_released_0 (the query, reading $dpsql_scalar0)
  Query: SELECT COUNT(*) FROM people WHERE age > CAST($dpsql_scalar0 AS DOUBLE)
  Scan people (private; privacy unit person_id)
    BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
    Filter: age > CAST($dpsql_scalar0 AS DOUBLE) (row-level; an error on a row makes it false)
    Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
    Output COUNT(*): from COUNT(*)
    Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
  Cost: epsilon 1, delta 0
  Expected 95% intervals (public, before any data is read):
    COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
  Engine SQL:
    __dpsql_bounded_people_heavy := SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
    __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_heavy") UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_heavy")) AS __ranked WHERE __rank <= 2
    SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people" WHERE COALESCE(TRY(age > CAST($dpsql_scalar0 AS DOUBLE)), FALSE)
Parameter $dpsql_scalar0 (DOUBLE) := the exact value of (SELECT AVG(floor) * 10 FROM depts) over public tables, read before the releases (no cost; NULL if it has no row), read by release(s) 1 as a typed engine parameter, never as SQL text: their plans, dry runs and sensitivities are the same whatever the value
Outer query (released rows only): SELECT __c0 AS "COUNT(*)" FROM __dpsql_released_0
Intervals: a column the outer query selects as released keeps each cell's 95% interval; a derived column (arithmetic, aggregates or windows over released values) has none
Note: the scalar subquery (SELECT AVG(floor) * 10 FROM depts) reads public tables only: its exact value is read first (no noise, no cost) and compared as a constant; a NULL value (no row) keeps no row in a comparison
Cost: epsilon 1, delta 0
;

SELECT p.dept, SUM(v.minutes) FROM people p JOIN visits v ON p.person_id = v.person_id WHERE v.minutes > (SELECT AVG(minutes) FROM visits) GROUP BY p.dept;
Post-processing over released results (scalar subquery): 2 release(s), each computed and noised first; the outer query then reads the released rows only, in a separate database without private tables, at no extra cost
Release 1 of 2: __dpsql_released_0 (scalar subquery)
  Query: SELECT AVG(minutes) FROM visits
  Scan visits (private; privacy unit person_id)
    BoundContribution: at most 3 row(s) per person_id (keyed hash, secret seed)
    Release __r0 = SUM(round(clamp(minutes, 0, 60) / 2.98023e-08) - 1006632960): discrete Laplace, sensitivity 90, scale 180, epsilon 0.5, 95% +-539.232
    Release __r1 = COUNT(minutes finite): discrete Laplace, sensitivity 3, scale 6, epsilon 0.5, 95% +-18
    Output AVG(minutes): from AVG(minutes)
    Note: each person_id keeps at most 3 row(s), chosen at random (secret seed)
  Cost: epsilon 1, delta 0
  Expected 95% intervals (public, before any data is read):
    AVG(minutes): about ±663.998 / n for a group of n rows (±6.63998 at n = 100, ±0.663998 at n = 1,000, ±0.0663998 at n = 10,000); the noisy n (±22) adds to it when n is small; clamped to the bounds
  Engine SQL:
    __dpsql_bounded_visits_heavy := SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3
    __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_heavy") UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_visits_heavy")) AS __ranked WHERE __rank <= 3) AS __kept
    SELECT COALESCE(SUM("__fx_minutes" - 1006632960), 0) AS __r0, COUNT("__fx_minutes") AS __r1 FROM "__dpsql_bounded_visits"
Release 2 of 2: __dpsql_released_1 (the query, reading $dpsql_scalar0)
  Query: SELECT p.dept, SUM(v.minutes) FROM people AS p JOIN visits AS v ON p.person_id = v.person_id WHERE v.minutes > CAST($dpsql_scalar0 AS DOUBLE) GROUP BY p.dept
  Scan people_join_3a34838d34fe (private; privacy unit person_id)
    Scan people AS p: private, its bounded relation (at most 2 row(s) per person_id)
    Join INNER visits AS v ON p.person_id = v.person_id: private, its bounded relation (at most 3 row(s) per person_id)
    Joined rows per person: at most 2 x 3 = 6, kept to join_max_rows = 4 by the bound after the join
    BoundContribution: at most 4 row(s) per person_id (keyed hash, secret seed)
    Filter: "minutes" > CAST($dpsql_scalar0 AS DOUBLE) (row-level; an error on a row makes it false)
    GroupBy: dept (partition selection, at most 1 key(s) per person)
    Release __r0 = SUM(round(clamp(minutes, 0, 60) / 2.98023e-08) - 0): discrete Laplace, sensitivity 240, scale 480, epsilon 0.5, 95% +-1437.95
    PartitionSelection: person count per key + discrete Laplace (scale 2), released when >= 33; epsilon 0.5, delta 1e-07
    Output dept: group key
    Output SUM("minutes"): from SUM("minutes")
    Note: each person_id keeps at most 4 row(s), chosen at random (secret seed)
    Note: GROUP BY dept: keys chosen by partition selection (each person_id counts in at most 1 key(s))
  Cost: epsilon 1, delta 1e-07
  Expected 95% intervals (public, before any data is read):
    SUM("minutes"): ±1437.95 (discrete Laplace, the same for every group); never below 0 (clamp = false leaves it unbiased)
  Engine SQL:
    __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
    __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
    __dpsql_source_people_join_3a34838d34fe := SELECT "p"."person_id" AS "person_id", "p"."age" AS "age", "p"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes" FROM "__dpsql_bounded_people" AS "p" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "p"."person_id" = "v"."person_id"
    __dpsql_bounded_people_join_3a34838d34fe_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
    __dpsql_bounded_people_join_3a34838d34fe := SELECT "person_id", "age", "dept", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes" FROM "__dpsql_source_people_join_3a34838d34fe" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
    __dpsql_keyed_people_join_3a34838d34fe_656d84e0dabc849f_g1_heavy := SELECT "person_id" FROM (SELECT DISTINCT "person_id", "dept" FROM "__dpsql_bounded_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_3a34838d34fe" GROUP BY "person_id" HAVING COUNT(*) > 1)) AS __pairs GROUP BY "person_id" HAVING COUNT(*) > 1
    __dpsql_keyed_people_join_3a34838d34fe_656d84e0dabc849f_g1 := SELECT "person_id", "age", "dept", "site", "minutes", "__fx_minutes", ROW_NUMBER() OVER (PARTITION BY "person_id", "dept" ORDER BY "age" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) = 1 AS "__unit_key" FROM "__dpsql_bounded_people_join_3a34838d34fe" WHERE NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_keyed_people_join_3a34838d34fe_656d84e0dabc849f_g1_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes", "__fx_minutes", __rep = 1 AND __rank <= 1 AS "__unit_key" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "__fx_minutes", __rep, ROW_NUMBER() OVER (PARTITION BY "person_id", __rep = 1 ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("dept" AS TEXT), CAST("person_id" AS TEXT))) ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM (SELECT "person_id", "age", "dept", "site", "minutes", "__fx_minutes", ROW_NUMBER() OVER (PARTITION BY "person_id", "dept" ORDER BY "age" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rep FROM "__dpsql_bounded_people_join_3a34838d34fe" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_keyed_people_join_3a34838d34fe_656d84e0dabc849f_g1_heavy")) AS __represented) AS __ranked
    SELECT "dept" AS __k0, COALESCE(SUM("__fx_minutes"), 0) AS __r0, CAST(COUNT_IF("__unit_key") AS BIGINT) AS __units FROM "__dpsql_keyed_people_join_3a34838d34fe_656d84e0dabc849f_g1" WHERE COALESCE(TRY("minutes" > CAST($dpsql_scalar0 AS DOUBLE)), FALSE) GROUP BY "dept" HAVING COUNT_IF("__unit_key") > 0
Parameter $dpsql_scalar0 (DOUBLE) := the value release 1 releases for (SELECT AVG(minutes) FROM visits) (NULL if it is ⊥ or has no row), read by release(s) 2 as a typed engine parameter, never as SQL text: their plans, dry runs and sensitivities are the same whatever the value
Budget split: epsilon 1 (release 1) + epsilon 1 (release 2): each release has the budget of its own SELECT (its OPTIONS, else the policy's default per-query budget), fixed before any data is read; the statement is charged once, for their sum, before the first release runs
Outer query (released rows only): SELECT __c0 AS "dept", __c1 AS "SUM(""minutes"")" FROM __dpsql_released_1
Intervals: a column the outer query selects as released keeps each cell's 95% interval; a derived column (arithmetic, aggregates or windows over released values) has none
Note: the scalar subquery (SELECT AVG(minutes) FROM visits) is released first (release 1); the answers that read it are for its released value, not the exact one, and so are their intervals; a NULL value (⊥, or no row) keeps no row in a comparison
Cost: epsilon 2, delta 1e-07 (epsilon 1 + 1: the sum of the 2 releases)
;

SELECT COUNT(*) FROM (SELECT dept, age FROM people p WHERE NOT EXISTS (SELECT 1 FROM visits v WHERE v.person_id = p.person_id)) t WHERE age > 20;
Scan people_join_61d1b1990982 (private; privacy unit person_id)
  Scan people AS people: private, its bounded relation (at most 2 row(s) per person_id)
  Semi-join EXISTS (SELECT 1 FROM visits AS v WHERE v.person_id = people.person_id): private, read within each person_id (correlated on the unit) from its bounded relation (at most 3 row(s) per person_id); adds no rows
  Joined rows per person: at most 2 = 2 (bounded again after the join)
  BoundContribution: at most 2 row(s) per person_id (keyed hash, secret seed)
  Filter: NOT __in0 AND "age" > 20 (row-level; an error on a row makes it false)
  Release __r0 = COUNT(*): discrete Laplace, sensitivity 2, scale 2, epsilon 1, 95% +-6
  Output COUNT(*): from COUNT(*)
  Note: each person_id keeps at most 2 row(s), chosen at random (secret seed)
Cost: epsilon 1, delta 0
Budget after this query (adaptive privacy filter): epsilon 1 spent at delta 1e-05, of epsilon 10; 10 such queries fit now
Expected 95% intervals (public, before any data is read):
  COUNT(*): ±6 (discrete Laplace); never below 0 (clamp = false leaves it unbiased)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_61d1b1990982 := SELECT "people"."person_id" AS "person_id", "people"."age" AS "age", "people"."dept" AS "dept", EXISTS(SELECT 1 FROM "__dpsql_bounded_visits" AS "__s0" WHERE "__s0"."person_id" = "people"."person_id") AS "__in0" FROM "__dpsql_bounded_people" AS "people"
  __dpsql_bounded_people_join_61d1b1990982_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_61d1b1990982" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2
  __dpsql_bounded_people_join_61d1b1990982 := SELECT "person_id", "age", "dept", "__in0" FROM "__dpsql_source_people_join_61d1b1990982" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_61d1b1990982_heavy") UNION ALL SELECT "person_id", "age", "dept", "__in0" FROM (SELECT "person_id", "age", "dept", "__in0", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("__in0" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "__in0" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_61d1b1990982" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_61d1b1990982_heavy")) AS __ranked WHERE __rank <= 2
  SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_61d1b1990982" WHERE NOT __in0 AND "age" > 20
Bounded relation of people_join_61d1b1990982: built by the first query that reads it
;
