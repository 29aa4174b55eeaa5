-- expect: DP102
LOAD httpfs
