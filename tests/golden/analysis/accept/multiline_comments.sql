-- Comments and line breaks may appear between tokens.
SELECT
  dept,            -- the key
  COUNT(*) AS n    -- rows per dept
FROM people
GROUP BY dept
