-- expect: DP102
DELETE FROM people WHERE age > 60
