-- expect: DP125
SELECT COUNT(*) FROM people WHERE CASE WHEN person_id = 17 AND age > 40 THEN regexp_matches(lpad(region || '1', 65536, 'ab'), '[ab]*a[ab]{999}c') ELSE false END
