-- GROUP BY an expression: the domain of age / 10 is derived from age in [18, 90] (73 keys)
SELECT COUNT(*) FROM people GROUP BY age / 10
