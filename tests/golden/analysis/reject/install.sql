-- expect: DP102
INSTALL httpfs
