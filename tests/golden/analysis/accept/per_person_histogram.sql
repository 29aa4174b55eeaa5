-- A per-person aggregate, then a histogram of it (Tableau's LOD FIXED, TPC-H Q13): one row per person, one release.
SELECT per_person, COUNT(*) AS people_count FROM (SELECT person_id, COUNT(*) AS per_person FROM people GROUP BY person_id) AS source GROUP BY per_person
