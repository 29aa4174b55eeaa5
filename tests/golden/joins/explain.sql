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
  COUNT(*): ±9 (discrete Laplace, the same for every group)
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
  COUNT(*): ±24 (discrete Laplace, the same for every group)
  SUM("floor"): ±96 (discrete Laplace, the same for every group)
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
  COUNT(*): ±12 (discrete Laplace)
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
  COUNT(*): ±6 (discrete Laplace)
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
  COUNT(*): ±6 (discrete Laplace)
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
  COUNT(*): ±48 (discrete Laplace, the same for every group)
  AVG("age"): about ±2125 / n for a group of n rows (±21.25 at n = 100, ±2.125 at n = 1,000, ±0.2125 at n = 10,000); the noisy n (±59) adds to it when n is small; clamped to the bounds
  SUM("minutes"): ±2875.9 (discrete Laplace, the same for every group)
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
  COUNT(DISTINCT "person_id"): ±3 (discrete Laplace)
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
  COUNT(*): ±12 (discrete Laplace, the same for every group)
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
  COUNT(*): ±12 (discrete Laplace)
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
  count: ±9 (discrete Laplace, the same for every group)
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
  COUNT(*): ±12 (discrete Laplace, the same for every group)
Engine SQL:
  __dpsql_bounded_people := SELECT "person_id", "age", "dept" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2) UNION ALL SELECT "person_id", "age", "dept" FROM (SELECT "person_id", "age", "dept", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_people" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 2)) AS __ranked WHERE __rank <= 2
  __dpsql_bounded_visits := SELECT "person_id", "site", "minutes", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "site", "minutes" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3) UNION ALL SELECT "person_id", "site", "minutes" FROM (SELECT "person_id", "site", "minutes", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT))) ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_visits" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_source_visits" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 3)) AS __ranked WHERE __rank <= 3) AS __kept
  __dpsql_source_people_join_ebbb7c208529 := SELECT "o"."person_id" AS "person_id", "o"."age" AS "age", "o"."dept" AS "dept", "v"."site" AS "site", "v"."minutes" AS "minutes", "d"."name" AS "name", "d"."floor" AS "floor" FROM "__dpsql_bounded_people" AS "o" INNER JOIN "__dpsql_bounded_visits" AS "v" ON "o"."person_id" = "v"."person_id" INNER JOIN "__dpsql_source_depts" AS "d" ON "v"."site" = "d"."name"
  __dpsql_bounded_people_join_ebbb7c208529_heavy := SELECT "person_id" FROM "__dpsql_source_people_join_ebbb7c208529" WHERE NOT "person_id" IS NULL GROUP BY "person_id" HAVING COUNT(*) > 4
  __dpsql_bounded_people_join_ebbb7c208529 := SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor", CASE WHEN ISFINITE("minutes") THEN CAST(ROUND(LEAST(GREATEST("minutes", 0), 60) * 33554432) AS BIGINT) ELSE NULL END AS "__fx_minutes" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor" FROM "__dpsql_source_people_join_ebbb7c208529" WHERE NOT "person_id" IS NULL AND NOT "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_ebbb7c208529_heavy") UNION ALL SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor" FROM (SELECT "person_id", "age", "dept", "site", "minutes", "name", "floor", ROW_NUMBER() OVER (PARTITION BY "person_id" ORDER BY MD5(CONCAT_WS(':', CAST($seed AS TEXT), CAST("person_id" AS TEXT), CAST("age" AS TEXT), CAST("dept" AS TEXT), CAST("site" AS TEXT), CAST(CAST(FLOOR(LEAST(GREATEST("minutes" * 1024.0, -4611686018427387904), 4611686018427387904)) AS BIGINT) AS TEXT), CAST("name" AS TEXT), CAST("floor" AS TEXT))) ASC NULLS FIRST, "age" ASC NULLS FIRST, "dept" ASC NULLS FIRST, "site" ASC NULLS FIRST, "minutes" ASC NULLS FIRST, "name" ASC NULLS FIRST, "floor" ASC NULLS FIRST) AS __rank FROM "__dpsql_source_people_join_ebbb7c208529" WHERE "person_id" IN (SELECT "person_id" FROM "__dpsql_bounded_people_join_ebbb7c208529_heavy")) AS __ranked WHERE __rank <= 4) AS __kept
  SELECT "floor" AS __k0, COUNT(*) AS __r0 FROM "__dpsql_bounded_people_join_ebbb7c208529" WHERE COALESCE(TRY("age" > 30 AND "age" * 2 < 200), FALSE) GROUP BY "floor"
Bounded relation of people_join_ebbb7c208529: built by the first query that reads it
;
