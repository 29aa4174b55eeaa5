-- expect: DP120
SET dpsql.sigma = 1
