-- expect: DP120
SET threads = 4
