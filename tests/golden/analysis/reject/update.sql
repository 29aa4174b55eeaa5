-- expect: DP102
UPDATE people SET income = 0
