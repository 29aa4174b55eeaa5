-- expect: DP142
SELECT COUNT(*) FROM people WHERE income || ' EUR' = '1 EUR'
