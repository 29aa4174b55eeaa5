-- SUM over a bounded float column (clamped to [0, 500000] on a grid).
SELECT SUM(income) AS total FROM people WHERE dept IN ('sales', 'engineering')
