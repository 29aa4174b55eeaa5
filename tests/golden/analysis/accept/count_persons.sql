-- COUNT(DISTINCT <privacy unit>) counts persons: sensitivity 1 without GROUP BY.
SELECT COUNT(DISTINCT person_id) AS people_count FROM people
