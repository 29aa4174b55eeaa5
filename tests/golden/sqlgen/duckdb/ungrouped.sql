# Ungrouped COUNT(*) over the session's bounded relation.
SELECT COUNT(*) FROM people;
SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people"
;

# The row filter runs inside TRY(...), so an error on a row makes it false.
SELECT COUNT(*) FROM people WHERE age >= 30 AND dept = 'sales';
SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people" WHERE age >= 30 AND dept = 'sales'
;

# WHERE with bound qmark parameters: parameters become literals before analysis.
# params: [30, "north"]
SELECT COUNT(*) FROM people WHERE age > ? AND region = ?;
SELECT COUNT(*) AS __r0 FROM "__dpsql_bounded_people" WHERE age > 30 AND region = 'north'
;

# SUM on the float grid: clamp, scale by 4096, round to BIGINT, sum as HUGEINT; NaN/inf dropped.
SELECT SUM(income) FROM people;
SELECT COALESCE(SUM("__fx_income"), 0) AS __r0 FROM "__dpsql_bounded_people"
;

# AVG on an int column: a centered grid sum and a count.
SELECT AVG(age) FROM people;
SELECT COALESCE(SUM(CASE WHEN NOT "age" IS NULL THEN CAST(LEAST(GREATEST("age", 18), 90) AS BIGINT) ELSE NULL END - 54), 0) AS __r0, COUNT(CASE WHEN NOT "age" IS NULL THEN 1 ELSE NULL END) AS __r1 FROM "__dpsql_bounded_people"
;

# COUNT(DISTINCT person_id).
SELECT COUNT(DISTINCT person_id) FROM people;
SELECT COUNT(DISTINCT "person_id") AS __r0 FROM "__dpsql_bounded_people"
;

# LOG of a bounded expression: clamped to its derived (outward-rounded) bounds on the sum's grid.
SELECT SUM(LOG(age + 2)) FROM people;
SELECT COALESCE(SUM(CASE WHEN ISFINITE(TRY(CAST(LOG(age + 2) AS DOUBLE))) THEN CAST(ROUND(LEAST(GREATEST(TRY(CAST(LOG(age + 2) AS DOUBLE)), 1.301029995083809), 1.9637878276407719) * 1073741824) AS BIGINT) ELSE NULL END), 0) AS __r0 FROM "__dpsql_bounded_people"
;
