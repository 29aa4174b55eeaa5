-- expect: DP110
WITH old AS (SELECT * FROM people WHERE age > 60) SELECT COUNT(*) FROM old
