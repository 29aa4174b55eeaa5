-- expect: DP103
SELECT COUNT(*) FROM 'people.parquet'
