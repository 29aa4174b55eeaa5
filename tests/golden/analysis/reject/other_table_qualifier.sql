-- expect: DP111
SELECT COUNT(*) FROM people WHERE other.age > 30
