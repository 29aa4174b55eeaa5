-- expect: DP103
SELECT COUNT(*) FROM duckdb_tables()
