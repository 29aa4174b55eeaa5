-- expect: DP113
SELECT COUNT(*) FROM people WHERE getenv('HOME') = region
