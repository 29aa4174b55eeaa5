-- expect: DP102
CREATE TABLE copy AS SELECT * FROM people
