-- expect: DP102
ATTACH 'other.duckdb' AS other
