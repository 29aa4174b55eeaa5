-- expect: DP114
SELECT person_id % 10 AS shard, COUNT(*) FROM people GROUP BY shard
