-- expect: DP102
DROP TABLE people
